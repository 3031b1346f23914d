"""What host hooks leave in the database: handled events, the skipped-event journal, and their report."""
