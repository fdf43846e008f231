"""Pure rendering over a graph snapshot: branch context, provider messages, views, compaction, aging."""
