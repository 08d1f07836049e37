// The WebSocket client of docs/client-protocol.md: hello/welcome, heartbeat, automatic reconnect with
// exponential backoff, resume from the last seen event seq, and no event applied twice.
// The seat (token, roomId, lastSeq) lives in sessionStorage so each browser tab can be its own player
// and a reload or a network drop resumes the same seat.

const STORE_KEY = 'nn.session';
const BACKOFF_START_MS = 500;
const BACKOFF_MAX_MS = 15000;

/**
 * The gateway's WebSocket on this page's own origin: the only place the seat token is ever sent
 * (no URL parameter can point it elsewhere; the server's CSP connect-src 'self' says the same).
 */
export function ownSocketUrl() {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
}

export function loadSession() {
  try {
    return JSON.parse(sessionStorage.getItem(STORE_KEY) || 'null');
  } catch {
    return null;
  }
}

function saveSession(session) {
  if (session) sessionStorage.setItem(STORE_KEY, JSON.stringify(session));
  else sessionStorage.removeItem(STORE_KEY);
}

/** The clientSeq of the play an error answers (its metadata or its `play-<clientSeq>` id); 0 if none. */
function playOf(msg) {
  const seq = Number(msg.metadata?.clientSeq ?? String(msg.id ?? '').replace('play-', ''));
  return Number.isInteger(seq) && seq > 0 ? seq : 0;
}

export class Connection {
  /**
   * @param {object} opts
   * @param {string} opts.url WebSocket URL
   * @param {() => string} opts.lang current UI language
   * @param {(msg: object) => void} opts.onMessage every message the app should handle (events deduplicated)
   * @param {(state: string) => void} opts.onState connecting | open | reconnecting | closed
   */
  constructor({ url, lang, onMessage, onState }) {
    this.url = url;
    this.lang = lang;
    this.onMessage = onMessage;
    this.onState = onState;
    this.ws = null;
    this.session = loadSession();
    this.lastSeq = this.session?.lastSeq ?? 0;
    this.appliedEvents = [];
    this.pendingPlays = new Map(); // clientSeq -> play message, re-sent after a resume
    this.lastClientSeq = Number(sessionStorage.getItem('nn.clientSeq') || 0);
    this.nextId = 1;
    this.attempt = 0;
    this.retryAfterMs = 0;
    this.heartbeatSeconds = 20;
    this.lastHeard = Date.now();
    this.heartbeatTimer = null;
    this.reconnectTimer = null;
    this.stopped = false;
  }

  get inRoom() {
    return Boolean(this.session?.token);
  }

  start() {
    this.stopped = false;
    this.open(this.attempt === 0 ? 'connecting' : 'reconnecting');
  }

  open(state) {
    this.onState(state);
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      this.lastHeard = Date.now();
      this.onState('open');
      this.send({ type: 'hello', lang: this.lang(), client: 'web-table/1' });
      if (this.session?.token) this.send({ type: 'resume', token: this.session.token, afterSeq: this.lastSeq });
      this.startHeartbeat();
    };
    ws.onmessage = (e) => this.receive(e.data);
    ws.onclose = () => {
      this.stopHeartbeat();
      if (this.ws === ws) this.ws = null;
      if (!this.stopped) this.scheduleReconnect();
      else this.onState('closed');
    };
    ws.onerror = () => {}; // onclose follows and handles it
  }

  scheduleReconnect() {
    clearTimeout(this.reconnectTimer);
    const backoff = Math.min(BACKOFF_MAX_MS, BACKOFF_START_MS * 2 ** this.attempt);
    const jitter = backoff * (0.8 + Math.random() * 0.4);
    const wait = Math.max(jitter, this.retryAfterMs);
    this.attempt += 1;
    this.retryAfterMs = 0;
    this.onState('reconnecting');
    this.reconnectTimer = setTimeout(() => this.open('reconnecting'), wait);
  }

  startHeartbeat() {
    this.stopHeartbeat();
    this.heartbeatTimer = setInterval(() => {
      if (Date.now() - this.lastHeard > 2 * this.heartbeatSeconds * 1000) {
        this.ws?.close(); // silent server: treat as a drop and reconnect
        return;
      }
      this.send({ type: 'ping' });
    }, this.heartbeatSeconds * 1000);
  }

  stopHeartbeat() {
    clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
  }

  /** Send a message; returns its id (so replies can be matched) or null when offline. */
  send(message) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return null;
    const id = message.id ?? this.nextId++;
    this.ws.send(JSON.stringify({ ...message, id }));
    return id;
  }

  /**
   * Send a play with a fresh, increasing clientSeq; kept until the server answers so a resume can
   * re-send it. `moveSeq` is the game move counter of the view it was chosen from: a re-sent play
   * that meets a game which moved on is refused (VIEW_OUTDATED) rather than applied at a new total.
   */
  play(action, moveSeq) {
    const clientSeq = Math.max(Date.now(), this.lastClientSeq + 1);
    this.lastClientSeq = clientSeq;
    sessionStorage.setItem('nn.clientSeq', String(clientSeq));
    const message = { type: 'play', id: `play-${clientSeq}`, clientSeq, action };
    if (Number.isInteger(moveSeq) && moveSeq >= 0) message.moveSeq = moveSeq;
    this.pendingPlays.set(clientSeq, message);
    this.send(message);
    return clientSeq;
  }

  /** Whether `msg` (an error) refuses the last play this seat sent (not an earlier, overtaken one). */
  isLatestPlay(msg) {
    const seq = playOf(msg);
    return seq > 0 && seq === this.lastClientSeq;
  }

  forgetSession() {
    this.session = null;
    this.lastSeq = 0;
    this.pendingPlays.clear();
    saveSession(null);
  }

  remember() {
    if (this.session) saveSession({ ...this.session, lastSeq: this.lastSeq });
  }

  receive(raw) {
    this.lastHeard = Date.now();
    let msg;
    try {
      msg = JSON.parse(raw);
    } catch {
      return;
    }
    switch (msg.type) {
      case 'welcome':
        if (msg.heartbeatSeconds && msg.heartbeatSeconds !== this.heartbeatSeconds) {
          this.heartbeatSeconds = msg.heartbeatSeconds;
          this.startHeartbeat();
        }
        break;
      case 'joined': {
        const sameRoom = this.session?.roomId === msg.roomId && this.session?.token === msg.token;
        if (!sameRoom) this.lastSeq = 0; // a new seat: its room's events start from the beginning
        this.session = { token: msg.token, roomId: msg.roomId, playerId: msg.playerId, role: msg.role, host: msg.host };
        this.remember();
        for (const play of this.pendingPlays.values()) this.send(play); // same clientSeq: applied at most once
        break;
      }
      case 'left':
        this.forgetSession();
        break;
      case 'event':
        if (msg.seq <= this.lastSeq) return; // already applied (a replay overlap): never twice
        this.lastSeq = msg.seq;
        this.appliedEvents.push(msg.seq);
        this.remember();
        break;
      case 'view':
        if (msg.seq < this.lastSeq) return; // older than what we already show
        this.lastSeq = msg.seq;
        this.remember();
        break;
      case 'snapshot':
        this.lastSeq = msg.seq;
        this.remember();
        break;
      case 'played':
        this.pendingPlays.delete(msg.clientSeq);
        break;
      case 'error': {
        const seq = playOf(msg);
        if (this.pendingPlays.has(seq)) this.pendingPlays.delete(seq);
        if (msg.reason === 'INVALID_TOKEN') this.forgetSession();
        break;
      }
      case 'goodbye':
        this.retryAfterMs = msg.retryAfterMs || 0;
        break;
      default:
        break;
    }
    this.onMessage(msg);
  }

  /** For tests: drop the socket as a network failure would (the client reconnects by itself). */
  dropForTest() {
    this.ws?.close();
  }
}
