"""What machine this is: host description, BLAS, caches, chips."""
