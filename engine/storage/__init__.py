"""How memory is kept: the connections and their transactions, the schema's migrations, and the read slots."""
