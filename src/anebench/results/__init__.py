"""Result records, their files and (later) the results store."""
