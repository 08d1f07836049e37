// The game table (spec §9): big total with a gauge ring and a big timer ring, the other seats in turn
// order with the direction between them, a centre pile the played card flies onto, banners for what
// just happened, your own seat, and your hand with tap-to-preview / tap-again-to-play and the choice
// panels. Everything shown comes from the server's view and events: legality, previews and refusal
// reasons included. The timer runs on the server's deadline, corrected by the measured clock offset.

import { $, fill, h, svg } from './dom.js';
import { badgeFor, lang, t } from './i18n.js';
import { exchangeStatus, exchanging, faceOf, pairButtons, pairPlays, passTag, roundsBanner, signed } from './rounds.js';

const GAUGE_R = 92;
const TIMER_R = 118;
const CIRC = (r) => 2 * Math.PI * r;
const BANNER_MS = 2200;
// A banner still queued this long after its event is news no more (unless it is the last one).
const BANNER_STALE_MS = 6000;
const BOT_AVATARS = ['🤖', '🦊', '🐼', '🐯', '🐸', '🐙', '🦉', '🐧', '🐨', '🐳'];

/** Colour of the gauge: green -> yellow -> red as the total nears 99 (hue 130 -> 0). */
export function gaugeColor(total) {
  const x = Math.min(1, Math.max(0, total / 99));
  const hue = Math.round(130 * (1 - x ** 1.6));
  return `hsl(${hue} 75% 45%)`;
}

export function gaugeLevel(total) {
  return total >= 90 ? 'high' : total >= 70 ? 'mid' : total < 0 ? 'negative' : 'low';
}

/** Colour of a total below 0 (003's 1980 ONO 99): blue, deeper as it falls. */
export function negativeColor(total) {
  const x = Math.min(1, -total / 99);
  return `hsl(210 80% ${Math.round(62 - 22 * x)}%)`;
}

/** A number as the table writes it: a real minus sign (U+2212), never a hyphen. */
export function num(n) {
  return n < 0 ? `−${-n}` : String(n);
}

/** Bots are named "봇 N" by the server; in English they read "Bot N". */
export function displayName(name, bot) {
  const m = bot ? /^봇 (\d+)$/.exec(name ?? '') : null;
  return m && lang() === 'en' ? `Bot ${m[1]}` : name ?? '?';
}

export function avatarLetter(name) {
  return Array.from(name ?? '?')[0]?.toUpperCase() ?? '?';
}

/** A bot's own animal (by its number), a person's initial. */
export function avatarFor(name, bot) {
  if (!bot) return avatarLetter(name);
  const n = Number(/(\d+)$/.exec(name ?? '')?.[1] ?? 1);
  return BOT_AVATARS[(n - 1) % BOT_AVATARS.length];
}

/** Classic cards: ♥ ♦ red, ♠ ♣ black (from the card id's suit letter). */
export function suitClass(cardId) {
  const m = /^(?:\d+|[AJQK])([SHDC])-/.exec(cardId ?? '');
  if (!m) return '';
  return m[1] === 'H' || m[1] === 'D' ? ' suit-red' : ' suit-black';
}

// 003's ONO 99 faces (the engine's card faces) drawn as a glyph with a word under it: the words
// are the UI's, in its language; any other face is drawn as the engine writes it.
const ONO_FACES = {
  ONO99: ['99', 'sub_ono99', 'name_ono99'],
  PLAY2: ['×2', 'sub_play2', 'name_play2'],
  DOUBLE: ['×2', 'sub_double', 'name_double'],
  REV: ['⇄', 'sub_reverse', 'name_reverse'],
  HOLD: ['‖', 'sub_hold', 'name_hold'],
  '-10': ['−10', null, null],
};

/** What a card shows: its big face, the word under it (null: none) and its name for a label. */
export function cardFace(card) {
  if (card.kind === 'joker') return { face: '🃏', sub: 'JOKER', name: 'JOKER' };
  const ono = ONO_FACES[card.face];
  if (ono) return { face: ono[0], sub: ono[1] && t(ono[1]), name: ono[2] ? t(ono[2]) : ono[0] };
  return { face: card.face, sub: null, name: card.face };
}

/** A face in running text (recent plays, banners): the name of an ONO 99 card, else the face. */
export function faceText(face) {
  return cardFace({ face }).name;
}

// 003's card ids (presets_ono.py): what a counted card looks like when the table never saw it.
const ONO_IDS = [
  [/^ON(\d+)-/, (m) => ({ kind: 'add', face: m[1] })],
  [/^OX-/, () => ({ kind: 'ono99', face: 'ONO99' })],
  [/^OR-/, () => ({ kind: 'reverse', face: 'REV' })],
  [/^OP-/, () => ({ kind: 'playTwo', face: 'PLAY2' })],
  [/^OM-/, () => ({ kind: 'minus', face: '-10' })],
  [/^OH-/, () => ({ kind: 'hold', face: 'HOLD' })],
];

/** A card by its id alone: `seen` (cards the table was shown) first, else what the id spells. */
export function cardById(id, seen) {
  const known = seen?.get(id);
  if (known) return known;
  for (const [re, make] of ONO_IDS) {
    const m = re.exec(id);
    if (m) return { id, ...make(m) };
  }
  return { id, kind: 'add', face: faceOf(id) };
}

/** 003's dead card: an ONO 99 that no play of the rule set lets out of the hand now. */
export function isDead(entry) {
  return entry.card.kind === 'ono99' && entry.choices.length === 0;
}

function reducedMotion() {
  return window.matchMedia?.('(prefers-reduced-motion: reduce)').matches ?? false;
}

export class Table {
  /**
   * @param {HTMLElement} root the #screen-table element
   * @param {{play: (action: object, moveSeq: number) => void, toast: (text: string, reason?: string) => void,
   *          leave: () => void, serverNow: () => number, sound?: (name: string) => void}} actions
   * @param {{replay?: boolean}} mode a replay table has no clock, no seat of its own and no way to leave
   */
  constructor(root, actions, { replay = false } = {}) {
    this.root = root;
    this.actions = actions;
    this.replay = replay;
    this.view = null;
    this.seats = new Map(); // playerId -> {connected, bot, name} from `room`
    this.selected = null; // card id tapped once
    this.jokerValue = null;
    this.shownTotal = null;
    this.countUp = null;
    this.sending = false;
    this.catchingUp = false; // events of a resume: already happened, no banners
    this.banners = []; // queue of {kind, text}
    this.bannerLog = []; // every banner shown, for the tests
    this.bannerTimer = null;
    this.longestTurn = 0; // the longest human turn seen this game: a much shorter one is the 3-second rule
    this.confirmingLeave = false;
    this.rules = null; // the room's preset ({name, summary, thresholds...}); null for the spec's modes
    this.scored = []; // handScored of this game: {round, player, cards, points} (003's points versions)
    this.scoreRound = 1; // the round the next handScored belongs to
    this.seen = new Map(); // card id -> card, for the counted hands (handScored names ids only)
    this.build();
    this.tick = this.tick.bind(this);
    requestAnimationFrame(this.tick);
  }

  build() {
    const ring = (r, cls, extra = {}) =>
      svg('circle', { cx: 130, cy: 130, r, class: cls, fill: 'none', ...extra });
    this.gaugeArc = ring(GAUGE_R, 'gauge-arc', {
      'stroke-dasharray': CIRC(GAUGE_R), 'stroke-dashoffset': CIRC(GAUGE_R), transform: 'rotate(-90 130 130)',
    });
    this.timerArc = ring(TIMER_R, 'timer-arc', {
      'stroke-dasharray': CIRC(TIMER_R), 'stroke-dashoffset': 0, transform: 'rotate(-90 130 130)',
    });
    this.marks = svg('g', { class: 'threshold-marks' });
    this.gaugeSvg = svg('svg', { viewBox: '0 0 260 260', class: 'gauge', 'data-testid': 'gauge', 'aria-hidden': 'true' },
      ring(TIMER_R, 'timer-track'), this.timerArc, ring(GAUGE_R, 'gauge-track'), this.gaugeArc, this.marks);
    this.rulesEl = h('div', { class: 'table-rules', 'data-testid': 'table-rules', hidden: true });
    this.timerBox = h('div', { class: 'timer', 'data-testid': 'timer', role: 'timer' });
    this.totalEl = h('div', { class: 'total', 'data-testid': 'total', 'aria-live': 'polite' }, '0');
    this.arrow = h('div', { class: 'direction', 'data-testid': 'direction', role: 'img' },
      svg('svg', { viewBox: '0 0 48 48', width: 44, height: 44, 'aria-hidden': 'true' },
        svg('path', { d: 'M40 24a16 16 0 1 1-6-12.5', fill: 'none', stroke: 'currentColor', 'stroke-width': 4, 'stroke-linecap': 'round' }),
        svg('path', { d: 'M36 4l-1 10-10-1', fill: 'none', stroke: 'currentColor', 'stroke-width': 4, 'stroke-linecap': 'round', 'stroke-linejoin': 'round' })));
    this.dirLabel = h('div', { class: 'dir-label' });
    this.opponents = h('div', { class: 'opponents', 'data-testid': 'turn-order' });
    this.status = h('div', { class: 'turn-status' });
    this.recent = h('ol', { class: 'recent', 'data-testid': 'recent-plays' });
    this.panel = h('div', { class: 'choice-panel' });
    this.hand = h('div', { class: 'hand', 'data-testid': 'hand' });
    this.exchange = h('div', { class: 'exchange-box' });
    this.info = h('div', { class: 'table-info' });
    this.pile = h('div', { class: 'pile', 'data-testid': 'pile', 'aria-live': 'polite' });
    this.banner = h('div', { class: 'banner', 'data-testid': 'banner', role: 'status', 'aria-live': 'assertive', hidden: true });
    this.offline = h('div', { class: 'offline-banner', 'data-testid': 'offline-banner', role: 'alert', hidden: true });
    this.me = h('div', { class: 'me-seat', 'data-testid': 'me-seat' });
    this.scoring = h('div', { class: 'scoring', hidden: true });
    this.leaveBox = h('div', { class: 'leave-box' });
    const centre = h('div', { class: 'centre' }, this.gaugeSvg, this.totalEl, this.timerBox);
    fill(this.root,
      this.offline,
      this.opponents,
      h('div', { class: 'middle' },
        h('div', { class: 'dir-box' }, this.arrow, this.dirLabel, this.info, this.rulesEl),
        centre,
        h('div', { class: 'pile-box' }, this.pile),
        this.banner),
      this.status,
      this.recent,
      this.scoring,
      this.panel,
      this.exchange,
      this.hand,
      h('div', { class: 'me-row' }, this.me, this.leaveBox),
    );
  }

  setRoom(room) {
    this.seats = new Map(room.seats.map((s) => [s.playerId, s]));
    this.setRules(room.rules ?? null);
    if (this.view) {
      this.renderOpponents(this.view, null);
      this.renderMe(this.view);
    }
  }

  /** The preset played: its name at the table, its thresholds marked on the gauge (33, 66, 99...). */
  setRules(rules) {
    this.rules = rules;
    this.rulesEl.hidden = !rules;
    this.rulesEl.dataset.rules = rules?.name ?? '';
    this.rulesEl.textContent = rules?.name ?? '';
    this.rulesEl.title = rules ? (lang() === 'en' ? rules.summaryEn : rules.summary) : '';
    const at = (total, r) => {
      const angle = (total / 99) * 2 * Math.PI - Math.PI / 2;
      return [130 + r * Math.cos(angle), 130 + r * Math.sin(angle)];
    };
    fill(this.marks, ...(rules?.thresholds ?? []).map((total) => {
      const [x1, y1] = at(total, GAUGE_R - 12);
      const [x2, y2] = at(total, GAUGE_R + 12);
      return svg('line', { x1, y1, x2, y2, class: 'threshold-mark', 'data-testid': 'threshold-mark', 'data-at': total });
    }));
  }

  /** Lives, or a preset's tokens (pennies, corners): hearts for the spec's modes, coins otherwise. */
  tokenGlyph() {
    return this.rules ? '🪙' : '♥';
  }

  /** The connection state: anything but open shows "연결 끊김" over the table. */
  setConnection(state) {
    const down = state === 'reconnecting' || state === 'closed';
    this.offline.hidden = !down;
    this.offline.textContent = down ? t('offlineBanner') : '';
  }

  nameOf(id) {
    const seat = this.seats.get(id);
    const player = this.view?.players.find((p) => p.id === id);
    return displayName(player?.name ?? seat?.name ?? id, seat?.bot);
  }

  /** A new game (or a new room): forget what belongs to the last one. */
  reset() {
    this.view = null;
    this.selected = null;
    this.jokerValue = null;
    // A play of the last game may have been in flight when it ended: its finished view goes to the
    // results screen, never through render(), so nothing else unlocks the new game's hand.
    this.sending = false;
    this.shownTotal = null;
    this.longestTurn = 0;
    this.banners = [];
    this.banner.hidden = true;
    this.confirmingLeave = false;
    this.handKey = null;
    this.clearScores();
    fill(this.pile);
    delete this.pile.dataset.card;
  }

  clearScores() {
    this.scored = [];
    this.scoreRound = 1;
    this.seen.clear();
    this.renderScoring();
  }

  /**
   * A play of ours was refused: let the hand act again, unless the refusal says the game has moved
   * past the view on screen (VIEW_OUTDATED) — the newer view is on its way and unlocks it itself.
   */
  playRefused(reason, currentMoveSeq) {
    if (reason === 'VIEW_OUTDATED' && this.view && this.view.seq < currentMoveSeq) return;
    this.sending = false;
    this.handKey = null; // the hand acts again
  }

  // -- events: the pile, the banners ----------------------------------------------------------

  /** One game event as it arrives (before the view that includes it). */
  onEvent(event) {
    const name = (id) => this.nameOf(id);
    switch (event.type) {
      case 'gameStarted':
        this.longestTurn = 0;
        this.clearScores();
        fill(this.pile);
        delete this.pile.dataset.card;
        break;
      case 'cardPlayed':
        this.seen.set(event.cardId, { id: event.cardId, kind: event.kind, face: event.face });
        this.land(event);
        this.sound('play');
        if (event.source === 'timeout') {
          this.announce('timeout', t('bn_timeout', { name: name(event.player), face: faceText(event.face), total: num(event.total) }));
        }
        break;
      case 'directionChanged':
        this.announce('reversed', t('bn_reversed', { name: name(event.player),
          dir: event.direction === 1 ? t('dirCw') : t('dirCcw') }));
        break;
      case 'reshuffled':
        this.announce('reshuffled', t('bn_reshuffled', { n: event.count }));
        break;
      case 'lifeLost':
        this.sound('lose');
        this.announce('lifeLost', t('bn_lifeLost', { name: name(event.player), left: event.left }));
        break;
      case 'eliminated': {
        this.sound('lose');
        // 003's points versions: a hand just counted means out of this round, back in the next.
        const counted = this.scored.at(-1);
        const round = counted?.player === event.player && counted.round === this.scoreRound;
        this.announce('eliminated', t(round ? 'bn_outOfRound' : 'bn_eliminated', { name: name(event.player), n: event.remaining }));
        break;
      }
      case 'roundStarted':
        this.scoreRound = event.round;
        fill(this.pile);
        delete this.pile.dataset.card;
        this.announce('roundStarted', t(event.reason === 'setup' ? 'bn_gameStart' : 'bn_newRound', {
          round: event.round, name: name(event.starter), total: num(event.total) }));
        break;
      case 'turnStarted': {
        const span = event.deadline - event.turnStartedAt;
        if (this.seats.get(event.player)?.bot) break; // a bot's pace says nothing about the rule
        if (this.longestTurn && span < this.longestTurn * 0.6) {
          this.announce('threeSeconds', t('bn_threeSeconds', { name: name(event.player), s: Math.round(span / 1000) }));
        }
        this.longestTurn = Math.max(this.longestTurn, span);
        break;
      }
      case 'turnSkipped':
        this.announce('skipped', t('bn_skipped', { name: name(event.player), by: name(event.by) }));
        break;
      case 'playAgain':
        this.announce('playAgain', t('bn_playAgain', { name: name(event.player) }));
        break;
      case 'tokensPaid':
        this.sound('lose');
        this.announce('tokensPaid', t(event.player === event.by ? 'bn_tokensPaidSelf' : 'bn_tokensPaid', {
          name: name(event.player), n: event.tokens, left: event.left, at: event.at }));
        break;
      case 'roundScored':
        this.announce('roundScored', t('bn_roundScored', { round: event.round }));
        break;
      case 'startCard':
        this.announce('startCard', t('bn_startCard', { face: event.card?.face ?? '?', total: num(event.total) }));
        break;
      case 'specialHand':
        this.announce('specialHand', t(event.holderWins ? 'bn_specialWin' : 'bn_specialAll', {
          name: name(event.player), n: event.count, rank: event.rank }));
        break;
      case 'obligationPassed':
        this.announce('obligationPassed', t(event.player === this.view?.viewer ? 'bn_obligationMine' : 'bn_obligation', {
          name: name(event.player), by: name(event.by), n: event.cards }));
        break;
      case 'secondCardOwed':
        this.announce('secondCardOwed', t(event.player === this.view?.viewer ? 'bn_secondCardMine' : 'bn_secondCard', {
          name: name(event.player) }));
        break;
      case 'handScored':
        this.scored.push({ round: this.scoreRound, player: event.player, cards: event.cards, points: event.points });
        this.announce('handScored', t('bn_handScored', { name: name(event.player), n: event.cards.length, points: event.points }));
        this.renderScoring();
        break;
      case 'cardsDiscarded':
        for (const card of event.cards) this.seen.set(card.id, card);
        this.announce('cardsDiscarded', t('bn_cardsDiscarded', { name: name(event.player), n: event.cards.length }));
        break;
      case 'gameFinished':
        this.sound('end');
        break;
      default: {
        const banner = roundsBanner(event, name);
        if (banner) this.announce(...banner);
        break;
      }
    }
  }

  sound(name) {
    if (!this.catchingUp) this.actions.sound?.(name);
  }

  /** The played card lands on the centre pile, flying from its player's seat. */
  land(event, fly = true) {
    const shown = cardFace({ kind: event.kind, face: event.face });
    const sub = event.kind === 'joker' || event.choice?.sign || event.choice?.aceValue
      ? choiceText(event.choice).trim() : shown.sub;
    const card = h('div', { class: `pile-card kind-${event.kind}${suitClass(event.cardId)}` },
      h('span', { class: 'face' }, shown.face),
      sub ? h('span', { class: 'sub' }, sub) : null);
    fill(this.pile, card, h('div', { class: 'pile-who' }, `${this.nameOf(event.player)} → ${num(event.total)}`));
    this.pile.dataset.card = event.cardId;
    this.pile.dataset.player = event.player;
    this.pile.dataset.source = event.source ?? '';
    if (!fly || this.catchingUp || reducedMotion() || !card.animate) return;
    const from = this.seatElement(event.player)?.getBoundingClientRect();
    const to = this.pile.getBoundingClientRect();
    if (!from || !to.width) return;
    const dx = from.left + from.width / 2 - (to.left + to.width / 2);
    const dy = from.top + from.height / 2 - (to.top + to.height / 2);
    card.animate([
      { transform: `translate(${dx}px, ${dy}px) scale(.5) rotate(-20deg)`, opacity: 0.4 },
      { transform: 'none', opacity: 1 },
    ], { duration: 380, easing: 'cubic-bezier(.2,.8,.3,1)' });
  }

  seatElement(playerId) {
    if (playerId === this.view?.viewer) return this.me;
    return this.opponents.querySelector(`[data-testid="opponent-${CSS.escape(playerId)}"]`);
  }

  /** Queue a banner everyone at the table reads (the player concerned and the others alike). */
  announce(kind, text) {
    if (this.catchingUp) return;
    this.banners.push({ kind, text, at: Date.now() });
    this.bannerLog.push({ kind, text });
    if (!this.bannerTimer) this.nextBanner();
  }

  nextBanner() {
    while (this.banners.length > 1 && Date.now() - this.banners[0].at > BANNER_STALE_MS) this.banners.shift();
    const next = this.banners.shift();
    if (!next) {
      this.bannerTimer = null;
      this.banner.hidden = true;
      return;
    }
    this.banner.hidden = false;
    this.banner.dataset.kind = next.kind;
    this.banner.textContent = next.text;
    // A backlog goes faster, so banners never lag far behind the table.
    this.bannerTimer = setTimeout(() => this.nextBanner(), this.banners.length ? BANNER_MS / 2 : BANNER_MS);
  }

  // -- hand scores (003's points versions) ------------------------------------------------------

  /** The last round's counted hands (cards and points) and the points table by round. */
  renderScoring() {
    this.scoring.hidden = !this.scored.length;
    if (!this.scored.length) {
      fill(this.scoring);
      return;
    }
    const round = this.scored.at(-1).round;
    const open = this.scoring.querySelector('details')?.open ?? false;
    fill(this.scoring,
      h('div', { class: 'round-scoring', 'data-testid': 'round-scoring', 'data-round': round },
        h('b', { class: 'rs-title' }, t('roundScoring', { round })),
        ...this.scored.filter((e) => e.round === round).map((e) => this.scoredHand(e))),
      h('details', { class: 'points-details', 'data-testid': 'points-details', open },
        h('summary', {}, t('pointsTable')), this.pointsTable()));
  }

  scoredHand(entry) {
    return h('div', { class: 'hand-scored', 'data-testid': 'hand-scored', 'data-player': entry.player,
      'data-points': entry.points, 'data-round': entry.round },
      h('span', { class: 'hs-name' }, this.nameOf(entry.player)),
      h('span', { class: 'hs-cards' }, ...entry.cards.map((id) => {
        const card = cardById(id, this.seen);
        const shown = cardFace(card);
        return h('span', { class: `mini-card kind-${card.kind}`, 'data-testid': 'scored-card', 'data-card': id,
          title: shown.name }, shown.face);
      })),
      h('span', { class: 'hs-points' }, t('pointsPlus', { n: signed(entry.points) })));
  }

  /**
   * Points by round and player, with each seat's running score: the view's `score` when a view
   * is on screen (the server's number), else the sum of the rounds. Null before any hand is counted.
   */
  pointsTable(view = this.view) {
    if (!this.scored.length) return null;
    const rounds = [...new Set(this.scored.map((e) => e.round))].sort((a, b) => a - b);
    const players = view?.players.map((p) => p.id) ?? [...new Set(this.scored.map((e) => e.player))];
    const cell = (player, round) => {
      const points = this.scored.filter((e) => e.player === player && e.round === round);
      return points.length ? points.reduce((sum, e) => sum + e.points, 0) : null;
    };
    return h('table', { class: 'points-table', 'data-testid': 'points-table' },
      h('thead', {}, h('tr', {},
        h('th', {}, t('tr_playerCol')),
        ...rounds.map((r) => h('th', {}, t('roundCol', { n: r }))),
        h('th', {}, t('tr_scoreCol')))),
      h('tbody', {}, ...players.map((id) => {
        const sum = rounds.reduce((total, r) => total + (cell(id, r) ?? 0), 0);
        const score = view?.players.find((p) => p.id === id)?.score ?? sum;
        return h('tr', { 'data-testid': 'points-row', 'data-player': id, 'data-score': score },
          h('td', {}, this.nameOf(id)),
          ...rounds.map((r) => {
            const n = cell(id, r);
            return h('td', { 'data-round': r, 'data-points': n ?? '' }, n === null ? '–' : String(n));
          }),
          h('td', { class: 'pt-total' }, String(score)));
      })));
  }

  // -- the view -------------------------------------------------------------------------------

  /** Render a new view; `previous` (if any) drives the animations. */
  render(view) {
    const previous = this.view;
    this.view = view;
    if (!view.myTurn || (previous && previous.seq !== view.seq)) this.sending = false;
    if (this.selected && !view.hand?.some((e) => e.card.id === this.selected)) this.selected = null;
    // A card tapped before my turn is confirmed at the total my turn starts with: one tap then
    // previews again instead of playing at once.
    if (view.myTurn && previous && !previous.myTurn) this.selected = null;
    for (const entry of view.hand ?? []) this.seen.set(entry.card.id, entry.card);
    document.body.dataset.mode = view.mode;
    this.renderTotal(view.total);
    this.renderDirection(view.direction, previous?.direction);
    this.renderOpponents(view, previous);
    this.renderStatus(view, previous);
    this.renderRecent(view);
    // The hand and its choice buttons are rebuilt only when they change: a view that only says
    // somebody's connection blinked must not pull a button from under a finger about to tap it.
    const handKey = JSON.stringify([view.seq, view.myTurn, view.hand, this.sending, this.selected]);
    if (handKey !== this.handKey) {
      this.handKey = handKey;
      this.renderHand(view);
      this.renderPanel(view);
    }
    this.renderMe(view);
    this.renderLeave(view);
    if (this.scored.length) this.renderScoring();
    const last = view.recentPlays.at(-1);
    if (!last) fill(this.pile);
    else if (this.pile.dataset.card !== last.cardId) this.land({ ...last, kind: 'shown' }, false); // after a reload
    fill(this.info,
      h('div', {}, t('round', { n: view.round })),
      h('div', {}, t('drawPile', { n: view.drawPileCount })),
    );
    this.timerBox.dataset.deadline = String(view.deadline);
  }

  renderTotal(total) {
    this.totalEl.dataset.value = String(total);
    const from = this.shownTotal ?? total;
    this.shownTotal = total;
    const ms = reducedMotion() ? 0 : Math.min(700, 60 + Math.abs(total - from) * 25);
    this.countUp = { from, to: total, start: performance.now(), ms };
    // Below 0 the arc runs the other way round from the top, in blue (003's 1980 -10).
    const negative = total < 0;
    const color = negative ? negativeColor(total) : gaugeColor(total);
    this.gaugeArc.setAttribute('stroke', color);
    this.gaugeArc.setAttribute('stroke-dashoffset', String(CIRC(GAUGE_R) * (1 - Math.min(Math.abs(total), 99) / 99)));
    this.gaugeArc.setAttribute('transform', negative ? 'translate(260 0) scale(-1 1) rotate(-90 130 130)' : 'rotate(-90 130 130)');
    this.gaugeArc.classList.toggle('negative', negative);
    this.gaugeSvg.dataset.level = gaugeLevel(total);
    this.gaugeSvg.dataset.sign = negative ? 'negative' : 'positive';
    this.totalEl.dataset.sign = negative ? 'negative' : 'positive';
    this.totalEl.style.color = color;
  }

  renderDirection(direction, before) {
    this.arrow.dataset.direction = String(direction);
    this.arrow.classList.toggle('ccw', direction === -1);
    if (before !== undefined && before !== direction) {
      this.arrow.classList.remove('spin');
      void this.arrow.offsetWidth; // restart the animation
      this.arrow.classList.add('spin');
    }
    this.dirLabel.textContent = direction === 1 ? t('dirCw') : t('dirCcw');
    this.arrow.setAttribute('aria-label', this.dirLabel.textContent);
  }

  /** The other seats in seat order starting after yours (the clockwise turn order), arrows between. */
  renderOpponents(view, previous) {
    const players = [...view.players].sort((a, b) => a.seat - b.seat);
    const mine = players.findIndex((p) => p.id === view.viewer);
    const order = mine < 0 ? players : [...players.slice(mine + 1), ...players.slice(0, mine)];
    const showLives = view.players.some((p) => p.lives > 0 || p.livesLost > 0);
    const arrow = view.direction === 1 ? '→' : '←';
    this.opponents.dataset.direction = String(view.direction);
    this.opponents.classList.toggle('crowded', order.length > 5);
    const items = [];
    order.forEach((p, i) => {
      if (i > 0) items.push(h('span', { class: 'turn-arrow', 'aria-hidden': 'true' }, arrow));
      const before = previous?.players.find((q) => q.id === p.id);
      const seat = this.seats.get(p.id);
      const connected = seat ? seat.connected : true;
      const current = view.phase === 'playing' && view.current === p.id;
      const hearts = [];
      const glyph = this.tokenGlyph();
      if (this.rules && p.lives > 3) hearts.push(h('span', { class: 'heart' }, `${glyph}×${p.lives}`));
      else for (let k = 0; k < p.lives; k++) hearts.push(h('span', { class: 'heart' }, glyph));
      if (before && before.lives > p.lives) hearts.push(h('span', { class: 'heart breaking' }, glyph));
      const name = displayName(p.name, seat?.bot);
      items.push(h('div', {
        class: `opponent${current ? ' current' : ''}${p.alive ? '' : ' out'}${connected ? '' : ' offline'}${seat?.bot ? ' bot' : ''}`,
        'data-testid': `opponent-${p.id}`, 'data-current': String(current),
        'data-alive': String(p.alive), 'data-connected': String(connected), 'data-seat': p.seat,
        'aria-label': `${name}${current ? ` · ${t('turnOf', { name })}` : ''}${connected ? '' : ` · ${t('disconnected')}`}`,
      },
        h('div', { class: 'avatar' }, avatarFor(p.name, seat?.bot)),
        h('div', { class: 'opp-name' }, name),
        h('div', { class: 'opp-meta' },
          h('span', { class: 'hand-count', 'data-testid': 'hand-count' }, `🂠 ${t('handCount', { n: p.handCount })}`),
          showLives ? h('span', { class: 'lives', 'data-testid': 'lives', 'data-lives': p.lives }, hearts.length ? hearts : '–') : null,
          p.score !== undefined ? h('span', { class: 'score', 'data-testid': 'score', 'data-score': p.score }, `★${p.score}`) : null),
        current ? this.owesBadge(view, 'seat-owes') : null,
        !p.alive ? h('div', { class: 'tag' }, t('eliminatedTag'))
          : !connected ? h('div', { class: 'tag warn', 'data-testid': 'offline-tag' }, t('disconnected')) : passTag(p),
      ));
    });
    fill(this.opponents, items);
  }

  renderMe(view) {
    const me = view.players.find((p) => p.id === view.viewer);
    if (!me) {
      fill(this.me, h('span', { class: 'muted' }, this.replay ? t('replay') : t('spectating')));
      return;
    }
    const current = view.phase === 'playing' && view.current === me.id;
    this.me.classList.toggle('current', current);
    this.me.classList.toggle('out', !me.alive);
    const showLives = view.players.some((p) => p.lives > 0 || p.livesLost > 0);
    fill(this.me,
      h('span', { class: 'avatar small' }, avatarLetter(me.name)),
      h('b', {}, me.name), h('span', { class: 'muted' }, ` (${t('you')})`),
      showLives ? h('span', { class: 'my-lives', 'data-testid': 'my-lives', 'data-lives': me.lives },
        this.rules ? `${this.tokenGlyph()}×${me.lives}` : '♥'.repeat(me.lives) || '♡') : null,
      me.score !== undefined ? h('span', { class: 'score', 'data-testid': 'my-score', 'data-score': me.score }, ` ★${me.score}`) : null,
      current ? this.owesBadge(view, 'my-owes') : null,
      !me.alive ? h('span', { class: 'tag' }, t('eliminatedTag')) : null);
  }

  renderLeave(view) {
    if (this.replay) return;
    if (!this.confirmingLeave) {
      fill(this.leaveBox, h('button', { type: 'button', class: 'btn small ghost', 'data-testid': 'leave-table',
        onclick: () => {
          if (view.viewer === null) return this.actions.leave(); // a spectator has nothing to lose
          this.confirmingLeave = true;
          this.renderLeave(this.view);
        } }, t('leave')));
      return;
    }
    fill(this.leaveBox,
      h('span', { class: 'muted leave-warn' }, t('leaveWarn')),
      h('button', { type: 'button', class: 'btn small primary', 'data-testid': 'leave-confirm', onclick: () => this.actions.leave() }, t('leaveYes')),
      h('button', { type: 'button', class: 'btn small', 'data-testid': 'leave-cancel',
        onclick: () => { this.confirmingLeave = false; this.renderLeave(this.view); } }, t('cancel')));
  }

  /** 003's Play 2: the badge of what the player to move still owes this turn (2, or 1 more). */
  owesBadge(view, testid) {
    const owed = view.obligation ?? 0;
    if (!owed || view.phase !== 'playing') return null;
    return h('span', { class: 'owes', 'data-testid': testid, 'data-owed': String(owed) },
      t(owed === 2 ? 'owesTwo' : 'owesOne'));
  }

  renderStatus(view, previous) {
    if (exchanging(view)) {
      fill(this.status, exchangeStatus(view, (id) => this.nameOf(id)));
      if (view.myTurn && !previous?.myTurn) this.sound('turn');
      return;
    }
    if (view.myTurn) {
      fill(this.status, h('div', { class: 'my-turn', 'data-testid': 'my-turn' }, t('myTurn')),
        this.owesBadge(view, 'obligation'));
      if (!previous?.myTurn) {
        this.sound('turn');
        if (navigator.vibrate && navigator.userActivation?.hasBeenActive) navigator.vibrate([120, 60, 120]);
      }
    } else {
      const name = this.nameOf(view.current);
      const text = view.current === null ? ''
        : view.viewer === null && !this.replay ? `${t('spectating')} · ${t('turnOf', { name })}` : t('turnOf', { name });
      fill(this.status, h('div', { class: 'their-turn' }, text), view.current === null ? null : this.owesBadge(view, 'obligation'));
    }
  }

  renderRecent(view) {
    fill(this.recent,
      ...view.recentPlays.slice(-3).reverse().map((r) =>
        h('li', {}, h('b', {}, this.nameOf(r.player)), ` ${faceText(r.face)}${choiceText(r.choice)} → ${num(r.total)}`)),
    );
  }

  renderHand(view) {
    if (!view.hand) {
      fill(this.hand);
      return;
    }
    const exchange = this.exchangeAction(view);
    const swapping = new Set(exchange?.discard ?? []);
    fill(this.hand,
      ...view.hand.map((entry) => {
        const { card } = entry;
        const selected = this.selected === card.id;
        const dead = isDead(entry);
        const firstRefusal = entry.choices.find((c) => !c.legal)?.reason;
        const badge = dead ? t('deadBadge') : badgeFor(firstRefusal);
        const { face, sub, name: word } = cardFace(card);
        return h('button', {
          class: `card kind-${card.kind}${suitClass(card.id)}${entry.playable ? '' : ' unplayable'}${dead ? ' dead' : ''}${swapping.has(card.id) ? ' swapping' : ''}${selected ? ' selected' : ''}`,
          'data-testid': `card-${card.id}`, 'data-playable': String(entry.playable),
          'data-dead': dead ? 'true' : null,
          'data-selected': selected ? 'true' : null, type: 'button',
          'aria-label': `${word}${dead ? ` · ${t('deadLabel')}` : entry.playable ? '' : ` · ${badge}`}`,
          'aria-pressed': String(selected),
          onclick: () => this.tapCard(entry),
        },
          h('span', { class: 'face' }, face),
          sub ? h('span', { class: 'sub' }, sub) : null,
          dead ? h('span', { class: 'dead-mark', 'aria-hidden': 'true' }, '✕') : null,
          // The space keeps the face and the badge two words in the visible text, as in the label.
          !entry.playable ? [' ', h('span', { class: 'badge', 'data-testid': 'card-badge' }, badge)] : null,
          selected ? this.previewBubble(entry) : null,
        );
      }),
    );
    this.renderExchange(view, exchange);
  }

  /** The exchange the view offers (003: four ONO 99s for four new cards), as a ready play; or null. */
  exchangeAction(view) {
    if (!view.myTurn) return null;
    return view.legalPlays?.find((lp) => lp.action.discard?.length)?.action ?? null;
  }

  /** The exchange button, above the hand, while the view offers it. */
  renderExchange(view, action) {
    if (!action) {
      fill(this.exchange);
      return;
    }
    fill(this.exchange, h('button', {
      type: 'button', class: 'btn primary exchange', 'data-testid': 'discard-ono',
      'data-cards': action.discard.join(' '), disabled: this.sending,
      onclick: () => !this.sending && this.send(action),
    }, t('discardBtn', { n: action.discard.length })));
  }

  /** The "내면 → 81" bubble, above the tapped card itself (single-choice cards). */
  previewBubble(entry) {
    if (entry.choices.length !== 1 || entry.jokerRange) return null;
    const choice = entry.choices[0];
    const canAct = this.view.myTurn && !this.sending;
    if (exchanging(this.view)) {
      return h('span', { class: 'preview', 'data-testid': 'preview' }, t('passBtn'), canAct ? h('small', {}, t('passHint')) : null);
    }
    if (pairPlays(this.view, entry.card.id).length) return null; // the panel offers it alone and as a pair
    return h('span', { class: `preview${choice.legal ? '' : ' refused'}`, 'data-testid': 'preview' },
      choice.legal ? t('play', { n: num(choice.result) }) : `${t('play', { n: num(choice.result) })} · ${badgeFor(choice.reason)}`,
      choice.legal && canAct ? h('small', {}, t('playHint')) : null);
  }

  tapCard(entry) {
    const { view } = this;
    if (isDead(entry)) return this.actions.toast(t('deadToast'));
    if (this.selected === entry.card.id && entry.choices.length === 1) {
      if (!view.myTurn) return this.actions.toast(t('notYourTurn'));
      const choice = entry.choices[0];
      if (choice.legal && !this.sending) this.send(choice.action);
      return;
    }
    this.selected = this.selected === entry.card.id ? null : entry.card.id;
    if (entry.jokerRange && this.selected) {
      // The dial starts at the current total when the range holds it, else at the range's minimum.
      const { min, max } = entry.jokerRange;
      this.jokerValue = view.total >= min && view.total <= max ? view.total : min;
    }
    this.handKey = null;
    this.renderHand(view);
    this.renderPanel(view);
  }

  send(action) {
    this.sending = true;
    // The move counter of the view on screen: the server refuses the play (VIEW_OUTDATED) instead
    // of applying it at another total if the game moved on meanwhile (a timeout, another device).
    this.actions.play(action, this.view.seq);
    this.selected = null;
    this.handKey = null;
    this.renderHand(this.view);
    this.renderPanel(this.view);
  }

  renderPanel(view) {
    const entry = view.hand?.find((e) => e.card.id === this.selected);
    const pairs = entry && view.myTurn ? pairPlays(view, entry.card.id) : [];
    if (!entry || (entry.choices.length === 1 && !entry.jokerRange && !pairs.length)) {
      fill(this.panel);
      this.panel.classList.remove('open');
      return;
    }
    this.panel.classList.add('open');
    const canAct = view.myTurn && !this.sending;
    const button = (testid, text, choice) =>
      h('button', {
        class: 'choice', type: 'button', 'data-testid': testid, disabled: !choice?.legal || !canAct,
        title: choice && !choice.legal ? badgeFor(choice.reason) : null,
        onclick: () => choice?.legal && this.send(choice.action),
      }, text, choice && !choice.legal ? h('small', {}, badgeFor(choice.reason)) : null);
    const { card } = entry;
    const find = (pred) => entry.choices.find((c) => pred(c.action));
    if (card.kind === 'plusMinus') {
      const plus = find((a) => a.sign === '+');
      const minus = find((a) => a.sign === '-');
      fill(this.panel,
        button('choice-plus', t('plusBtn', { v: card.value, n: num(plus.result) }), plus),
        button('choice-minus', t('minusBtn', { v: card.value, n: num(minus.result) }), minus),
      );
    } else if (card.kind === 'zero' && entry.choices.length === 2) {
      const keep = find((a) => a.dir === 'keep');
      const reverse = find((a) => a.dir === 'reverse');
      fill(this.panel,
        button('choice-keep', t('keepBtn', { n: num(keep.result) }), keep),
        button('choice-reverse', t('reverseBtn', { n: num(reverse.result) }), reverse),
      );
    } else if (card.kind === 'ace') {
      const [low, high] = entry.choices;
      fill(this.panel,
        button('choice-ace-1', t('aceBtn', { v: low.action.aceValue, n: num(low.result) }), low),
        button('choice-ace-high', t('aceBtn', { v: high.action.aceValue, n: num(high.result) }), high),
      );
    } else if (entry.jokerRange) {
      fill(this.panel, this.jokerDial(entry, canAct));
    } else if (pairs.length) {
      // A card that makes a pair: alone (as the second tap does) or with its partner.
      const [alone] = entry.choices;
      fill(this.panel,
        button('choice-single', t('singleBtn', { a: card.face, n: num(alone.result) }), alone),
        ...pairButtons(view, entry, button));
    }
  }

  jokerDial(entry, canAct) {
    const { min, max } = entry.jokerRange;
    const base = entry.choices[0].action;
    const set = (v) => {
      this.jokerValue = Math.min(max, Math.max(min, v));
      this.renderPanel(this.view);
    };
    const quick = max - min >= 90 ? [min, 50, max] : [min, 90, max];
    return h('div', { class: 'joker-dial' },
      h('div', { class: 'dial-title' }, t('jokerTitle')),
      h('div', { class: 'dial-row' },
        h('button', { type: 'button', class: 'round-btn', 'data-testid': 'joker-dec', 'aria-label': '−1', onclick: () => set(this.jokerValue - 1), disabled: this.jokerValue <= min }, '−'),
        h('div', { class: 'dial-value', 'data-testid': 'joker-value', 'data-value': this.jokerValue, style: `color:${gaugeColor(this.jokerValue)}` }, this.jokerValue),
        h('button', { type: 'button', class: 'round-btn', 'data-testid': 'joker-inc', 'aria-label': '+1', onclick: () => set(this.jokerValue + 1), disabled: this.jokerValue >= max }, '+')),
      h('input', { type: 'range', min, max, value: this.jokerValue, class: 'dial-range', 'aria-label': t('jokerTitle'),
        oninput: (e) => set(Number(e.target.value)) }),
      h('div', { class: 'quick' }, ...quick.map((v) =>
        h('button', { type: 'button', class: `chip${v === this.jokerValue ? ' on' : ''}`, 'data-testid': `joker-quick-${v}`, onclick: () => set(v) }, v))),
      h('button', { type: 'button', class: 'choice primary', 'data-testid': 'play-joker', disabled: !canAct,
        onclick: () => this.send({ ...base, jokerValue: this.jokerValue }) }, t('playJoker', { n: this.jokerValue })),
    );
  }

  /** Milliseconds left in the turn on screen, by the server's deadline and the server's clock. */
  timeLeft() {
    const view = this.view;
    if (!view || !(view.phase === 'playing' || exchanging(view)) || this.replay) return null;
    return Math.max(0, view.deadline - this.actions.serverNow());
  }

  /** Animation frame: total count-up and the timer ring. */
  tick(now) {
    if (this.countUp) {
      const { from, to, start, ms } = this.countUp;
      const x = ms ? Math.min(1, (now - start) / ms) : 1;
      const eased = 1 - (1 - x) ** 3;
      this.totalEl.textContent = num(Math.round(from + (to - from) * eased));
      if (x >= 1) this.countUp = null;
    }
    const left = this.timeLeft();
    if (left !== null) {
      const view = this.view;
      const duration = Math.max(1, view.deadline - view.turnStartedAt);
      const fraction = Math.min(1, left / duration);
      this.timerArc.setAttribute('stroke-dashoffset', String(CIRC(TIMER_R) * (1 - fraction)));
      // Red only when it is you who is running out: a bot's or another's turn stays calm.
      const urgent = Boolean(view.myTurn) && left < 5000;
      this.timerArc.classList.toggle('urgent', urgent);
      this.timerArc.classList.toggle('mine', Boolean(view.myTurn));
      this.timerBox.classList.toggle('urgent', urgent);
      const secs = String(Math.ceil(left / 1000));
      if (this.timerBox.textContent !== secs) {
        this.timerBox.textContent = secs;
        this.timerBox.setAttribute('aria-label', t('secondsLeft', { n: secs }));
      }
    } else if (this.timerBox.textContent) {
      this.timerBox.textContent = '';
    }
    requestAnimationFrame(this.tick);
  }
}

export function choiceText(choice) {
  if (!choice) return '';
  if (choice.sign) return choice.sign === '+' ? ' (+)' : ' (−)';
  if (choice.dir) return t(`choice_${choice.dir}`);
  if (choice.aceValue) return ` (${choice.aceValue})`;
  if (choice.jokerValue !== undefined) return ` (${choice.jokerValue})`;
  return '';
}

export { $ };
