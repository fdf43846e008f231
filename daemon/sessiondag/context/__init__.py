"""Rendering over a session: branch context (render), provider messages, views, system prompt,
compaction, aging + manifests (aging.advance_aging is the commit hook the runtime and the daemon
install on the store), attachments. Reads a Session; never writes on the read path.

Import the submodules directly (`from sessiondag.context.render import render_context`): this
package keeps no eager imports. It imports core and store, never runtime, rpc or above.
"""
