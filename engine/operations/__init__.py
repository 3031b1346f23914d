"""The operator's commands on a database: backup, doctor, export and import."""
