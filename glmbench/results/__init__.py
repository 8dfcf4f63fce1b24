"""Records and everything that reads or writes them: the record format, atomic CSV/JSON,
resumable stores (`records`), and record logic shared by the CLI and the report (`compare`)."""
