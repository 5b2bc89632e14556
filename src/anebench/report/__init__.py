"""Reports generated from the results store: Markdown, HTML, CSV, JSON, and the bar charts."""
