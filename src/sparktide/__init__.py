"""sparktide."""
