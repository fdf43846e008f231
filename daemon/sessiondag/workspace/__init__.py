"""Working-dir binding and file-change attribution (watchfiles)."""
