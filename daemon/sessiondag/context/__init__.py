"""Pure rendering over a session: branch context (render), provider messages, views, system prompt,
compaction, aging + manifests, spill, attachments. Reads a Session; never writes on the read path.

Import the submodules directly (`from sessiondag.context.render import render_context`): the store
imports `context.spill` and `context.aging`, so this package keeps no eager imports.
"""
