// The web table's entry point: screens (lobby, table, results, replay), the server connection and the
// demo mode (`?demo=table|lobby|results|replay|banners|presets|ono|ono-1980|ono-points|trick-bid|trick-play|trick-results`, `demo=1` = table)
// that renders fixtures without a server.

import { $, fill, h } from './dom.js';
import { Connection, ownSocketUrl } from './connection.js';
import { initLang, lang, setLang, t, translateStatic } from './i18n.js';
import { buildFrames, renderFrame } from './replay.js';
import { Sound } from './sound.js';
import { verifyDeal } from './verify.js';
import { avatarFor, displayName, Table } from './table.js';
import { renderTrickResults, TrickTable } from './trick.js';

const params = new URLSearchParams(location.search);
const demo = params.get('demo') === '1' ? 'table' : params.get('demo');

// A move a second when the replay plays by itself: slow enough to follow.
const REPLAY_STEP_MS = 1000;

const OPTION_VALUES = {
  lives: ['auto', 0, 1, 2, 3, 5],
  handSize: ['auto', 3, 4, 5],
  turnSeconds: [10, 15, 20, 30],
};

const app = {
  conn: null,
  room: null,
  view: null,
  replay: null,
  frames: [],
  frameIndex: 0,
  autoplay: null,
  table: null,
  rematch: null, // {bots, start}: a "한 판 더" room being set up like the last one
  verifyNext: false, // the replay asked for is for the deal check, not for watching
  presets: [], // the server's rulesList: every preset a room may play
};

// The spec's two modes are the mode select's; the preset select offers the others.
const SPEC_MODES = new Set(['kr-product', 'classic']);

// -- screens and small UI pieces ------------------------------------------------------------

function show(screen) {
  if (document.body.dataset.screen !== screen) $('[data-testid="toast"]').hidden = true; // stale elsewhere
  for (const id of ['lobby', 'table', 'trick', 'results', 'replay']) $(`#screen-${id}`).hidden = id !== screen;
  document.body.dataset.screen = screen;
}

let toastTimer = null;
function toast(text, reason) {
  const el = $('[data-testid="toast"]');
  el.textContent = text;
  el.dataset.reason = reason ?? '';
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, 3200);
}

function setConnState(state) {
  const el = $('[data-testid="connection"]');
  el.dataset.state = state;
  $('.conn-text', el).textContent = t(`conn_${state}`);
  app.table?.setConnection(state);
}

/** A preset's one-line description in the UI's language. */
export function presetSummary(preset) {
  return (lang() === 'en' ? preset.summaryEn : preset.summary) || preset.name;
}

function chosenPreset() {
  return app.presets.find((p) => p.name === $('#opt-rules').value) ?? null;
}

/** The preset select from the server's list, keeping the choice; the form follows the choice. */
function fillPresets() {
  const sel = $('#opt-rules');
  const keep = sel.value;
  fill(sel, h('option', { value: '' }, t('presetNone')),
    ...app.presets.filter((p) => !SPEC_MODES.has(p.name)).map((p) => h('option', { value: p.name }, p.name)));
  sel.value = app.presets.some((p) => p.name === keep) ? keep : '';
  presetChosen();
}

/** A preset plays its own deck, lives and hand: only seats (within its players) and the turn time stay. */
function presetChosen() {
  const preset = chosenPreset();
  for (const el of document.querySelectorAll('[data-mode-only]')) el.hidden = Boolean(preset);
  $('#house-rules-field').hidden = !preset;
  $('#rules-summary').textContent = preset ? `${presetSummary(preset)} · ${preset.source}` : '';
  fillSeats(preset);
}

function fillSeats(preset) {
  const seats = $('#opt-seats');
  const [min, max] = preset ? [preset.minPlayers, preset.maxPlayers] : [2, 10];
  const keep = Number(seats.value || seats.dataset.value || 4);
  fill(seats, ...Array.from({ length: max - min + 1 }, (_, i) => h('option', { value: i + min }, t('people', { n: i + min }))));
  seats.value = String(Math.min(max, Math.max(min, keep)));
}

/** "card.8=reverse, tokens=5" -> {"card.8": "reverse", tokens: "5"}; the server checks keys and values. */
function readOverrides() {
  const out = {};
  for (const pair of $('#opt-overrides').value.split(/[,;\n]+/)) {
    const [key, ...rest] = pair.split('=');
    if (key.trim()) out[key.trim()] = rest.join('=').trim();
  }
  return out;
}

function fillSelects() {
  fillSeats(chosenPreset());
  for (const [key, values] of Object.entries(OPTION_VALUES)) {
    const sel = $(`[data-opt="${key}"]`);
    const keep = sel.value;
    const label = (v) => v === 'auto' ? t('auto')
      : key === 'turnSeconds' ? t('seconds', { n: v })
      : key === 'handSize' ? t('cards', { n: v })
      : v === 0 ? t('livesNone') : `♥ × ${v}`;
    fill(sel, ...values.map((v) => h('option', { value: v }, label(v))));
    sel.value = keep || String(key === 'turnSeconds' ? 15 : 'auto');
  }
}

function renderSoundToggle() {
  const button = $('[data-testid="sound-toggle"]');
  button.textContent = app.sound.muted ? '🔇' : '🔊';
  button.setAttribute('aria-pressed', String(!app.sound.muted));
  button.setAttribute('aria-label', t(app.sound.muted ? 'soundOff' : 'soundOn'));
}

function applyLanguage() {
  translateStatic();
  if (app.sound) renderSoundToggle();
  fillSelects();
  fillPresets();
  setConnState($('[data-testid="connection"]').dataset.state);
  if (app.room) renderWaitingRoom();
  if (app.view?.game === 'trick') app.trickTable.render(app.view);
  else if (app.view) { tailorHelp(app.view.mode, app.view.options, app.room?.rules); app.table.render(app.view); }
  if (app.view?.phase === 'finished') renderResults(app.view);
  if (app.replay) {
    app.frames = buildFrames(app.replay);
    const at = app.frameIndex;
    app.frameIndex = -2; // not a step forward: no banners again
    showFrame(at);
  }
}

function readOptions() {
  const options = {};
  for (const sel of document.querySelectorAll('[data-opt]')) {
    const raw = sel.value;
    options[sel.dataset.opt] = /^\d+$/.test(raw) && sel.dataset.opt !== 'jokerRange' ? Number(raw) : raw;
  }
  return options;
}

function playerName() {
  const name = $('#player-name').value.trim();
  if (!name) {
    toast(t('needName'));
    $('#player-name').focus();
    return null;
  }
  localStorage.setItem('nn.name', name);
  return name;
}

// -- lobby ----------------------------------------------------------------------------------

function renderRooms(rooms) {
  const list = $('[data-testid="room-list"]');
  if (!rooms.length) {
    fill(list, h('li', { class: 'empty' }, t('noRooms')));
    return;
  }
  fill(list, ...rooms.map((r) =>
    h('li', { class: 'room-item', 'data-testid': `room-${r.roomId}` },
      h('div', {},
        h('b', { class: 'mono' }, r.roomId), ' ',
        h('span', { class: `phase phase-${r.phase}` }, t(r.phase)),
        h('div', { class: 'muted' }, `${r.hostName} · ${r.seated}/${r.maxSeats} · ${
          r.game === 'trick' ? t('gameTrick') : r.rules ?? r.mode}`)),
      h('div', { class: 'row' },
        r.phase === 'waiting' && r.seated < r.maxSeats
          ? h('button', { type: 'button', class: 'btn small primary', 'data-action': 'join', onclick: () => joinRoom(r.roomId) }, t('join'))
          : null,
        // A running game's one action is to watch it.
        h('button', { type: 'button', class: r.phase === 'playing' ? 'btn small primary' : 'btn small', 'data-action': 'spectate', onclick: () => spectate(r.roomId) }, t('spectate'))))));
}

function renderWaitingRoom() {
  const room = app.room;
  const box = $('#waiting-room');
  const inWaiting = room && room.phase === 'waiting';
  box.hidden = !inWaiting;
  $('#lobby-forms').hidden = Boolean(inWaiting);
  const chip = $('#room-chip');
  chip.hidden = !room;
  if (room) chip.textContent = room.roomId;
  if (!inWaiting) return;
  const me = app.conn?.session?.playerId;
  const isHost = Boolean(app.conn?.session?.host);
  const seats = [];
  for (let i = 0; i < room.maxSeats; i++) {
    const s = room.seats[i];
    seats.push(h('li', { class: `seat${s ? '' : ' free'}`, 'data-testid': `seat-${i}` },
      h('span', { class: 'avatar small' }, s ? avatarFor(s.name, s.bot) : '+'),
      s ? h('span', {}, displayName(s.name, s.bot), s.playerId === me ? ` (${t('you')})` : '') : h('span', { class: 'muted' }, t('empty')),
      s?.playerId === room.hostId ? h('span', { class: 'tag' }, t('host')) : null,
      s?.bot ? h('span', { class: 'tag' }, t('bot')) : null,
      s && !s.connected ? h('span', { class: 'tag warn' }, t('disconnected')) : null));
  }
  fill(box,
    h('h2', {}, t('waitingRoom')),
    h('div', { class: 'code-box' },
      h('div', { class: 'muted' }, t('shareCode')),
      h('button', { type: 'button', class: 'room-code mono', 'data-testid': 'room-code',
        onclick: () => navigator.clipboard?.writeText(room.roomId).then(() => toast(t('copied')), () => {}) }, room.roomId)),
    room.game === 'trick' ? h('div', { class: 'room-rules', 'data-testid': 'room-game', 'data-game': 'trick' },
      h('b', {}, t('gameTrick')), ' ',
      h('span', { class: 'muted' }, t('tr_target', { n: room.trickOptions?.target ?? 100 }))) : null,
    room.rules ? h('div', { class: 'room-rules', 'data-testid': 'room-rules', 'data-rules': room.rules.name },
      h('b', {}, room.rules.name), ' ', h('span', { class: 'muted' }, presetSummary(room.rules)),
      Object.keys(room.rules.overrides).length
        ? h('div', { class: 'muted mono' }, Object.entries(room.rules.overrides).map(([k, v]) => `${k}=${v}`).join(', '))
        : null) : null,
    h('ul', { class: 'seats' }, seats),
    room.spectators ? h('div', { class: 'muted' }, t('spectators', { n: room.spectators })) : null,
    h('div', { class: 'row center' },
      isHost ? h('button', { type: 'button', class: 'btn', 'data-testid': 'add-bot', disabled: room.seats.length >= room.maxSeats,
        onclick: () => send({ type: 'addBot' }) }, t('addBot')) : null,
      isHost ? h('button', { type: 'button', class: 'btn primary', 'data-testid': 'start-game', disabled: room.seats.length < (room.game === 'trick' ? room.maxSeats : 2),
        onclick: () => send({ type: 'startGame' }) }, t('start')) : h('div', { class: 'muted' }, t('waitHost')),
      h('button', { type: 'button', class: 'btn ghost', 'data-testid': 'leave-room', onclick: leaveRoom }, t('leave'))),
  );
}

// -- actions --------------------------------------------------------------------------------

function send(message) {
  if (demo) {
    toast(t('demo', { what: JSON.stringify(message) }));
    return null;
  }
  const id = app.conn.send(message);
  if (id === null) toast(t('conn_reconnecting'));
  return id;
}

function trickChosen() {
  return $('#opt-game').value === 'trick';
}

/** The trick game has its own options and exactly three seats: the adding game's fields go away. */
function gameChosen() {
  $('#trick-fields').hidden = !trickChosen();
  $('#adding-fields').hidden = trickChosen();
}

function createRoom() {
  const name = playerName();
  if (!name) return;
  if (trickChosen()) {
    const trickOptions = {};
    for (const sel of document.querySelectorAll('[data-trick-opt]')) {
      trickOptions[sel.dataset.trickOpt] = /^\d+$/.test(sel.value) ? Number(sel.value) : sel.value;
    }
    send({ type: 'createRoom', name, seats: 3, game: 'trick', trickOptions });
    return;
  }
  const message = { type: 'createRoom', name, seats: Number($('#opt-seats').value), options: readOptions() };
  const preset = chosenPreset();
  if (preset) {
    message.rules = preset.name;
    const overrides = readOverrides();
    if (Object.keys(overrides).length) message.overrides = overrides;
  }
  send(message);
}

function roomCode() {
  // Codes are capitals (the field shows them so); what was typed in lower case means the same room.
  const code = $('#room-code').value.trim().toUpperCase();
  if (!code) toast(t('needCode'));
  return code;
}

function joinRoom(code = roomCode()) {
  const name = code && playerName();
  if (name) send({ type: 'joinRoom', roomId: code, name });
}

function spectate(code = roomCode()) {
  if (code) send({ type: 'spectate', roomId: code });
}

/** Leave the room for good (waiting room, table, results): the server frees this connection. */
function leaveRoom() {
  app.rematch = null;
  if (!demo) app.conn.leave();
  resetToLobby();
}

/**
 * "한 판 더": the server seats this player in the finished game's rematch room (same settings and
 * size): the first to ask hosts it, the others who ask join it. The host adds the bots again and
 * starts at once when all the others were bots (else the others are awaited in the waiting room).
 */
function rematch() {
  const room = app.room;
  if (!room) return;
  const others = room.seats.filter((s) => s.playerId !== app.conn?.session?.playerId);
  const plan = { bots: others.filter((s) => s.bot).length, start: others.every((s) => s.bot) };
  if (demo) return toast(t('demo', { what: 'rematch' }));
  app.rematch = plan;
  plan.id = send({ type: 'rematch' });
}

/** The rematch room's next step, on each `room` of it: one bot at a time, then start. */
function continueRematch(room) {
  const plan = app.rematch;
  if (!plan || room.phase !== 'waiting' || !app.conn?.session?.host) return;
  const bots = room.seats.filter((s) => s.bot).length;
  if (bots < plan.bots) {
    if (plan.asked !== bots) {
      plan.asked = bots;
      send({ type: 'addBot' });
    }
    return;
  }
  app.rematch = null;
  if (plan.start) send({ type: 'startGame' });
  else toast(t('rematchNote'), 'rematch');
}

function resetToLobby() {
  app.room = null;
  app.view = null;
  app.replay = null;
  app.table.reset();
  app.trickTable.reset();
  stopAutoplay();
  renderWaitingRoom();
  show('lobby');
  if (app.conn && !demo) app.conn.send({ type: 'listRooms' });
}

function play(action, moveSeq) {
  if (demo) {
    toast(t('demo', { what: JSON.stringify(action) }));
    return;
  }
  app.conn.play(action, moveSeq);
}

// -- results and replay ---------------------------------------------------------------------

function renderResults(view) {
  const result = view.result;
  $('#trick-deals').hidden = true;
  // 003's points versions: the table's points by round, with the final scores.
  const points = view.game === 'trick' ? null : app.table.pointsTable(view);
  fill($('#points-results'), points ? [h('h3', {}, t('pointsTable')), points] : []);
  $('#points-results').hidden = !points;
  if (view.game === 'trick') {
    $('[data-testid="rematch"]').hidden = view.viewer === null;
    // The deal check and the replay player re-run the adding game: not offered for a trick match.
    $('[data-testid="verify-deal"]').hidden = true;
    $('[data-testid="open-replay"]').hidden = true;
    const bot = (id) => Boolean(app.room?.seats.find((s) => s.playerId === id)?.bot);
    renderTrickResults(view, { summary: $('[data-testid="summary"]'), ranking: $('#ranking'), deals: $('#trick-deals'), bot });
    return;
  }
  $('[data-testid="verify-deal"]').hidden = false;
  $('[data-testid="open-replay"]').hidden = false;
  $('[data-testid="rematch"]').hidden = view.viewer === null; // a spectator has no seat to bring
  if (app.resultsOf !== view.seedCommitment) { // a new game's results: the last check is not about it
    app.resultsOf = view.seedCommitment;
    $('#fairness').hidden = true;
  }
  const bot = (id) => Boolean(app.room?.seats.find((s) => s.playerId === id)?.bot);
  const name = (id) => displayName(view.players.find((p) => p.id === id)?.name ?? id, bot(id));
  $('[data-testid="summary"]').textContent = lang() === 'en' ? result.summaryEn : result.summary;
  fill($('#ranking'), ...result.ranking.map((r) =>
    h('li', { class: `rank-row${r.rank === 1 ? ' winner' : ''}${r.player === view.viewer ? ' me' : ''}`,
      'data-testid': 'ranking-row', 'data-player': r.player, 'data-rank': r.rank },
      h('span', { class: 'rank' }, t('rank', { n: r.rank })),
      h('span', { class: 'avatar small' }, avatarFor(view.players.find((p) => p.id === r.player)?.name, bot(r.player))),
      h('b', {}, name(r.player)),
      h('span', { class: 'muted' },
        r.eliminatedAtRound === null ? t('survived') : t('outRound', { n: r.eliminatedAtRound }),
        r.livesLost ? ` · ${t('livesLost', { n: r.livesLost })}` : ''))));
}

/** "공정성 확인": the deal re-run from the revealed seed, each check with its outcome. */
function showFairness(replay) {
  const result = verifyDeal(replay);
  const names = new Map(replay.players.map((p) => [p.id, p.name]));
  const name = (id) => names.get(id) ?? id;
  const label = (c) => c.kind === 'hand' ? t('fair_hand', { name: name(c.player), n: c.published.length })
    : c.kind === 'starter' ? t('fair_starter', { name: name(c.published) })
    : c.kind === 'deckSize' ? t('fair_deckSize', { n: c.published }) : t('fair_commitment');
  const box = $('#fairness');
  box.hidden = false;
  box.dataset.verdict = result.ok ? 'ok' : 'mismatch';
  const commitment = result.checks.find((c) => c.kind === 'commitment');
  fill(box,
    h('h3', {}, t('fairTitle')),
    h('p', { class: 'verdict', 'data-testid': 'fairness-verdict' }, result.ok ? t('fairOk') : t('fairBad')),
    h('div', { class: 'muted mono' }, t('fairSeed', { seed: replay.seed })),
    commitment ? h('div', { class: 'muted mono hash' }, commitment.published) : null,
    h('ul', { class: 'checks' }, ...result.checks.map((c) =>
      h('li', { 'data-testid': `fair-${c.kind}`, 'data-ok': String(c.ok) }, c.ok ? '✓ ' : '✗ ', label(c)))));
  box.scrollIntoView?.({ block: 'nearest' });
}

function openReplay(replay) {
  app.replay = replay;
  app.frames = buildFrames(replay);
  app.replayTable ??= new Table($('#replay-frame'), { toast, serverNow: () => Date.now() }, { replay: true });
  app.replayTable.reset();
  if (app.room) app.replayTable.setRoom(app.room); // which seats are bots
  $('#replay-scrub').max = String(Math.max(0, app.frames.length - 1));
  show('replay');
  app.frameIndex = -1;
  showFrame(0);
}

/** Step `index` of the replay; one step forward plays its events on the table (pile, banners). */
function showFrame(index) {
  if (!app.frames.length) return;
  const next = Math.max(0, Math.min(app.frames.length - 1, index));
  const forward = next === app.frameIndex + 1;
  app.frameIndex = next;
  $('#replay-scrub').value = String(next);
  const frame = app.frames[next];
  $('#replay-text').textContent = frame.text;
  $('[data-testid="replay-step"]').textContent = t('replayStep', { i: next + 1, n: app.frames.length });
  renderFrame(app.replayTable, frame, forward);
}

function stopAutoplay() {
  clearInterval(app.autoplay);
  app.autoplay = null;
  $('[data-testid="replay-play"]').textContent = t('autoplay');
}

function toggleAutoplay() {
  if (app.autoplay) return stopAutoplay();
  $('[data-testid="replay-play"]').textContent = t('pause');
  app.autoplay = setInterval(() => {
    if (app.frameIndex >= app.frames.length - 1) return stopAutoplay();
    showFrame(app.frameIndex + 1);
  }, REPLAY_STEP_MS);
}

// -- server messages ------------------------------------------------------------------------

function onMessage(msg) {
  switch (msg.type) {
    case 'welcome':
      if (!app.conn.inRoom) app.conn.send({ type: 'listRooms' });
      if (!app.presets.length) app.conn.send({ type: 'listRules' });
      break;
    case 'rulesList':
      app.presets = msg.presets;
      fillPresets();
      break;
    case 'joined':
      if (app.room && app.room.roomId !== msg.roomId) {
        app.table.reset();
        app.view = null; // a rematch: the finished game's view is not this room's
      }
      app.table.catchingUp = true; // a resume's missed events come next: already happened
      if (!app.view) show('lobby');
      break;
    case 'room':
      app.room = msg.room;
      app.table.setRoom(msg.room);
      app.trickTable.setRoom(msg.room);
      renderWaitingRoom();
      if (msg.room.phase === 'waiting') {
        app.table.catchingUp = false;
        show('lobby');
        continueRematch(msg.room);
      }
      break;
    case 'event':
      app.table.onEvent(msg.event);
      break;
    case 'rooms':
      renderRooms(msg.rooms);
      break;
    case 'view':
      onView(msg.view ?? msg.trick);
      break;
    case 'snapshot':
      break; // the view that follows replaces everything
    case 'played':
      if (app.view?.game === 'trick') app.trickTable.played();
      break;
    case 'replay':
      if (app.verifyNext) {
        app.verifyNext = false;
        showFairness(msg);
      } else openReplay(msg);
      break;
    case 'left':
      resetToLobby();
      break;
    case 'error':
      toast(msg.message, msg.reason);
      if (app.rematch && app.rematch.id === msg.id) app.rematch = null;
      if (msg.reason === 'INVALID_TOKEN') { toast(t('sessionLost'), msg.reason); resetToLobby(); }
      if (app.view?.game === 'trick') {
        if (app.conn?.isLatestPlay?.(msg)) app.trickTable.playRefused();
        break;
      }
      if (app.conn?.isLatestPlay?.(msg)) app.table.playRefused(msg.reason, Number(msg.metadata?.currentMoveSeq));
      if (app.view) app.table.render(app.view); // re-enable the hand after a refused play
      break;
    case 'goodbye':
      setConnState('reconnecting');
      break;
    default:
      break; // events only feed animations, which the views already drive
  }
}

function onView(view) {
  app.view = view;
  app.table.catchingUp = false;
  if (view.game === 'trick') {
    document.body.dataset.game = 'trick';
    document.body.dataset.help = 'trick';
    if (view.phase === 'finished') {
      renderResults(view);
      show('results');
      return;
    }
    show('trick');
    app.trickTable.render(view);
    return;
  }
  document.body.dataset.game = 'adding';
  tailorHelp(view.mode, view.options, app.room?.rules);
  if (view.phase === 'finished') {
    renderResults(view);
    show('results');
    return;
  }
  show('table');
  app.table.render(view);
}

/** Help shows the rules of this room only: its mode's card table with its joker range, or a
 * preset's own description and house rules (the mode's tables do not describe a preset's cards). */
function tailorHelp(mode, options, rules) {
  document.body.dataset.help = rules ? 'preset' : mode;
  const [min, max] = String(options?.jokerRange ?? '60-99').split('-');
  $('#help-joker').textContent = t('helpJoker', { min, max });
  $('#help-preset-name').textContent = rules?.name ?? '';
  $('#help-preset-summary').textContent = rules ? presetSummary(rules) : '';
  const house = Object.entries(rules?.overrides ?? {}).map(([k, v]) => `${k}=${v}`).join(', ');
  $('#help-preset-house').textContent = house ? t('helpHouseRules', { rules: house }) : '';
}

// -- wiring ---------------------------------------------------------------------------------

async function loadDemo(name) {
  const res = await fetch(`demo/${name}.json`);
  return res.json();
}

async function startDemo() {
  setConnState('open');
  if (demo === 'lobby') {
    renderRooms((await loadDemo('rooms')).rooms);
    app.conn = { session: { playerId: 'p1', host: true } };
    onMessage(await loadDemo('room-waiting'));
    return;
  }
  if (demo === 'replay') {
    openReplay(await loadDemo('replay'));
    const step = Number(params.get('step') ?? 0);
    if (step) showFrame(step);
    return;
  }
  if (demo === 'trick-results') {
    app.conn = { session: { playerId: 'p1', host: true } };
    onMessage(await loadDemo('room-trick'));
    onMessage(await loadDemo('view-trick-finished'));
    return;
  }
  if (demo === 'trick-bid' || demo === 'trick-play') {
    app.conn = { session: { playerId: 'p1', host: true } };
    onMessage(await loadDemo('room-trick'));
    const message = await loadDemo(`view-${demo}`);
    message.trick.deadline = Date.now() + 20_000; // a running clock
    onMessage(message);
    return;
  }
  if (demo === 'results') {
    onView((await loadDemo('view-finished')).view);
    return;
  }
  const fixture = { table: 'view-table', waiting: 'view-waiting-turn', spectator: 'view-spectator', table10: 'view-table-10',
    ono: 'view-ono', 'ono-1980': 'view-ono-1980', 'ono-points': 'view-ono-points' }[demo] ?? 'view-table';
  const bannerDemo = { banners: 'events', presets: 'events-presets', ono: 'events-ono', 'ono-points': 'events-ono-points' }[demo];
  if (bannerDemo) window.__ninetyNine = { get banners() { return [...app.table.bannerLog]; } };
  const message = await loadDemo(fixture);
  const view = message.view;
  // Make the demo's turn current so the timer ring runs.
  const span = view.deadline - view.turnStartedAt;
  view.turnStartedAt = Date.now() - 4000;
  view.deadline = view.turnStartedAt + span;
  onMessage(await loadDemo({ table10: 'room-10', presets: 'room-preset', ono: 'room-ono', 'ono-1980': 'room-ono-1980',
    'ono-points': 'room-ono-points' }[demo] ?? 'room'));
  onView(view);
  if (bannerDemo) {
    // Every kind of announced event, one after the other, through the table's own handling.
    for (const { event } of (await loadDemo(bannerDemo)).events) {
      await new Promise((done) => { setTimeout(done, 600); });
      app.table.onEvent(event);
    }
  }
  const select = params.get('select');
  if (select) {
    const entry = view.hand.find((e) => e.card.id === select);
    if (entry) app.table.tapCard(entry);
  }
}

function wire() {
  $('[data-testid="create-room"]').addEventListener('click', createRoom);
  $('#opt-rules').addEventListener('change', presetChosen);
  $('#opt-game').addEventListener('change', gameChosen);
  $('[data-testid="join-room"]').addEventListener('click', () => joinRoom());
  $('[data-testid="spectate-room"]').addEventListener('click', () => spectate());
  $('[data-testid="refresh-rooms"]').addEventListener('click', () => send({ type: 'listRooms' }));
  $('[data-testid="kid-preset"]').addEventListener('click', () => {
    $('[data-opt="mode"]').value = 'kr-product';
    $('[data-opt="jokerRange"]').value = '0-99';
    $('[data-opt="handSize"]').value = '5';
    toast(t('kidApplied'));
  });
  $('[data-testid="lang-toggle"]').addEventListener('click', () => {
    setLang(lang() === 'ko' ? 'en' : 'ko');
    app.conn?.hello?.();
    applyLanguage();
  });
  const help = $('#help');
  $('[data-testid="help-toggle"]').addEventListener('click', () => { help.hidden = !help.hidden; });
  $('#help-close').addEventListener('click', () => { help.hidden = true; });
  $('#help-x').addEventListener('click', () => { help.hidden = true; });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape') help.hidden = true; });
  help.addEventListener('click', (e) => { if (e.target === help) help.hidden = true; });
  $('[data-testid="back-to-lobby"]').addEventListener('click', leaveRoom);
  $('[data-testid="replay-back"]').addEventListener('click', () => {
    stopAutoplay();
    if (app.view?.phase === 'finished') show('results');
    else leaveRoom();
  });
  $('[data-testid="rematch"]').addEventListener('click', rematch);
  $('[data-testid="sound-toggle"]').addEventListener('click', () => {
    app.sound.setMuted(!app.sound.muted);
    renderSoundToggle();
  });
  const code = $('#room-code');
  code.addEventListener('input', () => {
    const at = code.selectionStart;
    code.value = code.value.toUpperCase();
    code.setSelectionRange(at, at);
  });
  code.addEventListener('keydown', (e) => { if (e.key === 'Enter') joinRoom(); });
  $('[data-testid="verify-deal"]').addEventListener('click', () => {
    if (demo) return loadDemo('replay').then(showFairness);
    app.verifyNext = true;
    return send({ type: 'getReplay', roomId: app.conn.session?.roomId ?? app.room?.roomId });
  });
  $('[data-testid="open-replay"]').addEventListener('click', () => {
    if (demo) loadDemo('replay').then(openReplay);
    else send({ type: 'getReplay', roomId: app.conn.session?.roomId ?? app.room?.roomId });
  });
  $('[data-testid="replay-prev"]').addEventListener('click', () => { stopAutoplay(); showFrame(app.frameIndex - 1); });
  $('[data-testid="replay-next"]').addEventListener('click', () => { stopAutoplay(); showFrame(app.frameIndex + 1); });
  $('[data-testid="replay-play"]').addEventListener('click', toggleAutoplay);
  $('#replay-scrub').addEventListener('input', (e) => { stopAutoplay(); showFrame(Number(e.target.value)); });
}

function main() {
  initLang();
  $('#player-name').value = localStorage.getItem('nn.name') ?? '';
  app.sound = new Sound();
  app.table = new Table($('#screen-table'), {
    play, toast, leave: leaveRoom, serverNow: () => app.conn?.serverNow?.() ?? Date.now(),
    sound: (name) => app.sound.play(name),
  });
  app.trickTable = new TrickTable($('#screen-trick'), {
    play, leave: leaveRoom, serverNow: () => app.conn?.serverNow?.() ?? Date.now(),
  });
  renderSoundToggle();
  wire();
  applyLanguage();
  show('lobby');
  if (demo) {
    startDemo();
    return;
  }
  app.conn = new Connection({ url: ownSocketUrl(), lang, onMessage, onState: setConnState });
  const conn = app.conn;
  // Test hook: which event seqs were applied, in order (a resume must neither lose nor repeat one).
  window.__ninetyNine = {
    get lastSeq() { return conn.lastSeq; },
    get appliedEvents() { return [...conn.appliedEvents]; },
    drop: () => conn.dropForTest(),
    get clockOffset() { return conn.clockOffset; },
    get banners() { return [...app.table.bannerLog]; },
    get sounds() { return [...app.sound.played]; },
    timeLeft: () => app.table.timeLeft(),
  };
  conn.start();
}

main();
