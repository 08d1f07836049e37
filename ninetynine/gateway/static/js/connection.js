// The WebSocket client of docs/client-protocol.md: hello/welcome, heartbeat, automatic reconnect with
// exponential backoff, resume from the last seen event seq, and no event applied twice.
// The seat (token, roomId, lastSeq) lives in sessionStorage so each browser tab can be its own player
// and a reload or a network drop resumes the same seat.

const STORE_KEY = 'nn.session';
const CLOCK_KEY = 'nn.clock';
const BACKOFF_START_MS = 500;
const BACKOFF_MAX_MS = 15000;
// Application heartbeat: a ping every 2 s (the server then closes us after 6 s of silence and tells
// the others), and 5 s without a word from the server is a drop, even if the socket still looks open.
const HEARTBEAT_S = 2;
// A hidden tab's timers are throttled by the browser: it asks for the server's usual heartbeat
// instead, so it is not taken for a dropped line while nobody looks at it.
const HIDDEN_HEARTBEAT_S = 20;
const SILENCE_MS = 5000;
// Clock samples older than this are dropped: the shortest round trip of the recent ones wins.
const CLOCK_SAMPLE_MAX_AGE_MS = 120000;

/**
 * The gateway's WebSocket on this page's own origin: the only place the seat token is ever sent
 * (no URL parameter can point it elsewhere; the server's CSP connect-src 'self' says the same).
 */
export function ownSocketUrl() {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
}

function loadClock() {
  try {
    const clock = JSON.parse(sessionStorage.getItem(CLOCK_KEY) || 'null');
    return clock && Number.isFinite(clock.offset) ? clock : null;
  } catch {
    return null;
  }
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
    this.heartbeatSeconds = HEARTBEAT_S;
    this.lastHeard = Date.now();
    this.pings = new Map(); // ping id -> local send time, for the clock offset
    this.clock = loadClock(); // {offset, rtt, at}: server time ≈ Date.now() + offset
    this.heartbeatTimer = null;
    this.lastPing = 0;
    this.reconnectTimer = null;
    this.stopped = false;
  }

  get inRoom() {
    return Boolean(this.session?.token);
  }

  /** Milliseconds to add to Date.now() to get the server's clock (0 until measured). */
  get clockOffset() {
    return this.clock?.offset ?? 0;
  }

  /** The server's clock now, as far as the last round trips tell. */
  serverNow() {
    return Date.now() + this.clockOffset;
  }

  start() {
    this.stopped = false;
    document.addEventListener('visibilitychange', () => this.hello());
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
    // An upgrade that never completes (the line is dead) is given up like a silent socket.
    setTimeout(() => { if (this.ws === ws && ws.readyState === WebSocket.CONNECTING) this.abandon(); }, SILENCE_MS);
    ws.onopen = () => {
      this.attempt = 0;
      this.lastHeard = Date.now();
      this.onState('open');
      this.hello();
      this.ping(); // measure the clock before the resume's view needs it
      if (this.session?.token) this.send({ type: 'resume', token: this.session.token, afterSeq: this.lastSeq });
      this.startHeartbeat();
    };
    ws.onmessage = (e) => { if (this.ws === ws) this.receive(e.data); };
    ws.onclose = () => {
      if (this.ws !== ws) return; // a socket already given up as silent
      this.stopHeartbeat();
      this.ws = null;
      if (!this.stopped) this.scheduleReconnect();
      else this.onState('closed');
    };
    ws.onerror = () => {}; // onclose follows and handles it
  }

  /**
   * Give up on the current socket now. A silent network drop leaves a socket whose close handshake
   * can hang for a minute: it is detached (its late messages and close are ignored) rather than awaited.
   */
  abandon() {
    const ws = this.ws;
    if (!ws) return;
    this.ws = null;
    this.stopHeartbeat();
    try { ws.close(); } catch { /* already closing */ }
    if (!this.stopped) this.scheduleReconnect();
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
    const every = Math.min(this.heartbeatSeconds * 1000, 1000);
    this.heartbeatTimer = setInterval(() => {
      const silent = Date.now() - this.lastHeard;
      if (silent > Math.max(SILENCE_MS, 2.5 * this.heartbeatSeconds * 1000)) {
        this.abandon(); // no pong: the line is dead even if the socket has not noticed
        return;
      }
      if (Date.now() - this.lastPing >= this.heartbeatSeconds * 1000) this.ping();
    }, every);
  }

  /** hello: the language, and the heartbeat this tab keeps (short while visible). */
  hello() {
    const heartbeatSeconds = document.visibilityState === 'hidden' ? HIDDEN_HEARTBEAT_S : HEARTBEAT_S;
    this.send({ type: 'hello', lang: this.lang(), client: 'web-table/1', heartbeatSeconds });
  }

  ping() {
    const id = this.send({ type: 'ping', clock: true });
    if (id === null) return;
    this.lastPing = Date.now();
    this.pings.set(id, this.lastPing);
    if (this.pings.size > 20) this.pings.delete(this.pings.keys().next().value);
  }

  /** A pong with serverTime: offset = serverTime - midpoint of the round trip; the shortest recent one wins. */
  measure(msg) {
    const sent = this.pings.get(msg.id);
    this.pings.delete(msg.id);
    if (sent === undefined || !msg.serverTime) return;
    const now = Date.now();
    const sample = { offset: msg.serverTime - (sent + now) / 2, rtt: now - sent, at: now };
    const old = this.clock;
    if (!old || now - old.at > CLOCK_SAMPLE_MAX_AGE_MS || sample.rtt <= old.rtt) {
      this.clock = sample;
      try { sessionStorage.setItem(CLOCK_KEY, JSON.stringify(sample)); } catch { /* private mode */ }
    }
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
      case 'pong':
        this.measure(msg);
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

  /** Leave the bound room (if any) and forget its seat; the server answers `left`. */
  leave() {
    if (this.inRoom) this.send({ type: 'leaveRoom' });
    this.forgetSession();
  }
}
