"""Virtual memory for the context window: pages and their four levels, working sets, faults and search."""
