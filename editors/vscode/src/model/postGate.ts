// Posts to a webview that wait for its script (no vscode import). VS Code's webview host hands what was
// posted meanwhile to a new document on its load event or 200 ms after writing it, whichever comes first,
// whether its scripts ran or not: a message can reach a document nobody listens in yet (the chat's
// media/chat.js comes through the webview's resource service worker, slow on a busy machine), and a chat
// opened again after Close All Editors stayed empty. So posts wait until the script says it listens
// ('ready') and go out in order then.
export class PostGate<M> {
  private waiting: M[] | undefined = [];

  /** `send` posts to the webview; `resend` posts the whole state again (its document was loaded again). */
  constructor(private readonly send: (m: M) => void, private readonly resend: () => void) {}

  post(m: M): void {
    if (this.waiting) this.waiting.push(m);
    else this.send(m);
  }

  /** The script listens: what waited goes out; a later 'ready' (a reloaded document starts empty) resends. */
  ready(): void {
    const waited = this.waiting;
    this.waiting = undefined;
    if (waited) for (const m of waited) this.send(m);
    else this.resend();
  }
}
