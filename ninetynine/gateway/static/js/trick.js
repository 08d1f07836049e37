// The trick-taking "99" table (docs/games/trick-taking.md): the seats with their bids, tricks and
// scores, the trick in the middle, and your hand. While bidding you set three cards aside and see the
// tricks they bid (♣3 ♥2 ♠1 ♦0, the values the server's `bidChoice` gives); then you announce or
// pass; then you play one of the cards the server marks playable (follow-suit is the server's).
// Everything shown comes from the server's view: this module has no rules of its own.

import { fill, h } from './dom.js';
import { lang, t } from './i18n.js';
import { avatarFor, displayName } from './table.js';

const SUIT_ORDER = { C: 0, H: 1, S: 2, D: 3 };
const RANK_ORDER = ['6', '7', '8', '9', '10', 'J', 'Q', 'K', 'A'];
const SYMBOL = { S: '♠', H: '♥', D: '♦', C: '♣' };

/** A card as the table draws it: its face, red for ♥ ♦. */
export function trickCard(card, attrs = {}, ...extra) {
  const red = card.suit === 'H' || card.suit === 'D';
  return h('button', { type: 'button', class: `card trick-card${red ? ' suit-red' : ' suit-black'}`,
    'data-card': card.id, 'aria-label': card.face, ...attrs },
  h('span', { class: 'face' }, card.rank), h('span', { class: 'suit' }, SYMBOL[card.suit] ?? card.suit), ...extra);
}

/** The hand sorted for reading: by suit (♣ ♥ ♠ ♦, the bid order), low to high within a suit. */
function sortedHand(hand) {
  return [...hand].sort((a, b) => (SUIT_ORDER[a.card.suit] - SUIT_ORDER[b.card.suit])
    || (RANK_ORDER.indexOf(a.card.rank) - RANK_ORDER.indexOf(b.card.rank)));
}

/** The tricks a set of cards bids, from the suit values the server sent with the bid choice. */
export function bidCount(cards, suitValues) {
  return cards.reduce((n, c) => n + (suitValues?.[c.suit] ?? 0), 0);
}

export class TrickTable {
  /**
   * @param {HTMLElement} root the #screen-trick element
   * @param {{play: (action: object, moveSeq: number) => void, serverNow: () => number, leave: () => void}} actions
   */
  constructor(root, actions) {
    this.root = root;
    this.actions = actions;
    this.view = null;
    this.seats = new Map();
    this.chosen = []; // card ids set aside for the bid, in the order tapped
    this.sending = false;
    this.el = h('div', { class: 'trick-table', 'data-testid': 'trick-table' });
    this.timer = h('div', { class: 'trick-timer', 'data-testid': 'trick-timer', role: 'timer' });
    this.tick = this.tick.bind(this);
    setInterval(this.tick, 250);
  }

  setRoom(room) {
    this.seats = new Map(room.seats.map((s) => [s.playerId, s]));
  }

  reset() {
    this.view = null;
    this.chosen = [];
    this.sending = false;
  }

  name(id) {
    const player = this.view?.players.find((p) => p.id === id);
    return displayName(player?.name ?? id, this.seats.get(id)?.bot);
  }

  render(view) {
    // A decision sent stays sent until it is answered (`played`, a refusal) or no longer owed: while
    // bidding, the others' bids bring views in which mine is still pending.
    if (!view.myTurn || view.phase !== this.view?.phase || view.deal !== this.view?.deal) this.sending = false;
    if (view.phase !== 'bidding' || !view.myTurn) this.chosen = [];
    const inHand = new Set((view.hand ?? []).map((e) => e.card.id));
    this.chosen = this.chosen.filter((id) => inHand.has(id));
    this.view = view;
    if (this.el.parentNode !== this.root) fill(this.root, this.el);
    fill(this.el,
      this.header(view),
      this.playersRow(view),
      this.trickArea(view),
      this.timer,
      this.status(view),
      this.myArea(view),
      this.scoreTable(view));
    this.tick();
  }

  header(view) {
    const trumps = view.trumps ? `${t('tr_trumps')} ${SYMBOL[view.trumps]}` : t('tr_noTrumps');
    return h('div', { class: 'trick-head', 'data-testid': 'trick-head' },
      h('b', {}, t('tr_deal', { n: view.deal })),
      h('span', {}, t('tr_dealer', { name: this.name(view.dealer) })),
      h('span', { 'data-testid': 'trick-trumps' }, trumps),
      h('span', { class: 'muted' }, t('tr_target', { n: view.options?.target ?? 100 })));
  }

  playersRow(view) {
    return h('ul', { class: 'trick-players', 'data-testid': 'trick-players' }, ...view.players.map((p) => {
      const pending = view.pending.includes(p.id);
      const bid = p.id === view.viewer && view.myBid ? view.myBid : p.bid;
      const bidText = bid ? `${bid.cards.map((c) => c.face).join(' ')} = ${bid.tricks}`
        : p.bidPlaced ? t('tr_bidHidden') : t('tr_bidNone');
      return h('li', { class: `trick-player${pending ? ' pending' : ''}${p.id === view.viewer ? ' me' : ''}`,
        'data-testid': `trick-player-${p.id}`, 'data-player': p.id },
      h('span', { class: 'avatar small' }, avatarFor(p.name, this.seats.get(p.id)?.bot)),
      h('div', { class: 'who' },
        h('b', {}, this.name(p.id), p.id === view.viewer ? ` (${t('you')})` : ''),
        p.id === view.declarer ? h('span', { class: 'tag', 'data-testid': 'declarer-tag' }, t('tr_declarer')) : null,
        view.passed.includes(p.id) ? h('span', { class: 'tag' }, t('tr_passed')) : null,
        p.id === view.dealer ? h('span', { class: 'tag' }, t('tr_dealerTag')) : null),
      h('div', { class: 'muted', 'data-testid': 'bid' }, t('tr_bid'), ' ', bidText),
      h('div', { 'data-testid': 'tricks' }, t('tr_tricks', {
        n: p.tricksTaken, of: bid ? bid.tricks : '?' })),
      h('div', { class: 'muted' }, t('handCount', { n: p.handCount }), ' · ',
        h('b', { 'data-testid': 'score' }, t('tr_points', { n: p.score }))));
    }));
  }

  trickArea(view) {
    const cards = view.trick.cards.map((c) => h('div', { class: 'trick-slot', 'data-player': c.player },
      h('div', { class: 'muted small' }, this.name(c.player)), trickCard(c.card, { disabled: true, tabindex: -1 })));
    const last = view.lastTrick.length && !view.trick.cards.length
      ? h('div', { class: 'muted small', 'data-testid': 'last-trick' },
        t('tr_lastTrick'), ' ', view.lastTrick.map((c) => `${this.name(c.player)} ${c.card.face}`).join(' · '))
      : null;
    return h('div', { class: 'trick-centre', 'data-testid': 'trick' },
      h('div', { class: 'muted' }, view.phase === 'playing'
        ? t('tr_trickNo', { n: view.trick.number }) : t(`tr_phase_${view.phase}`)),
      h('div', { class: 'trick-cards' }, ...cards), last);
  }

  status(view) {
    let text;
    if (view.viewer === null) text = t('spectating');
    else if (view.phase === 'bidding') text = view.myTurn ? t('tr_chooseBid') : t('tr_waitBids');
    else if (view.myTurn && view.phase === 'announcing') text = t('tr_announceOrPass');
    else if (view.myTurn) text = t('myTurn');
    else text = view.current ? t('turnOf', { name: this.name(view.current) }) : '';
    return h('div', { class: 'turn-status', 'data-testid': 'trick-status' }, text);
  }

  myArea(view) {
    if (!view.hand) return null;
    const parts = [];
    const suitValues = view.bidChoice?.suitValues;
    if (view.phase === 'bidding' && view.myTurn) {
      const byId = new Map(view.hand.map((e) => [e.card.id, e.card]));
      const chosen = this.chosen.map((id) => byId.get(id));
      parts.push(h('div', { class: 'bid-box', 'data-testid': 'bid-box' },
        h('div', { class: 'bid-cards' }, ...chosen.map((c) => trickCard(c, { onclick: () => this.toggle(c.id) })),
          ...Array.from({ length: 3 - chosen.length }, () => h('div', { class: 'card bid-empty' }))),
        h('div', { class: 'bid-count', 'data-testid': 'bid-count' }, t('tr_bidMakes', { n: bidCount(chosen, suitValues) })),
        h('div', { class: 'muted small' }, t('tr_bidValues')),
        h('button', { type: 'button', class: 'btn primary', 'data-testid': 'place-bid',
          disabled: chosen.length !== 3 || this.sending, onclick: () => this.placeBid() }, t('tr_placeBid'))));
    }
    if (view.myTurn && view.phase === 'announcing') {
      parts.push(h('div', { class: 'row center', 'data-testid': 'announce-box' },
        h('button', { type: 'button', class: 'btn primary', 'data-testid': 'announce', disabled: this.sending,
          onclick: () => this.send({ kind: 'announce' }) }, t('tr_announce')),
        h('button', { type: 'button', class: 'btn', 'data-testid': 'pass', disabled: this.sending,
          onclick: () => this.send({ kind: 'pass' }) }, t('tr_pass'))));
    }
    const bidding = view.phase === 'bidding' && view.myTurn;
    const hand = sortedHand(view.hand).filter((e) => !this.chosen.includes(e.card.id));
    parts.push(h('div', { class: 'hand trick-hand', 'data-testid': 'hand' }, ...hand.map((e) => {
      const playable = view.phase === 'playing' && e.playable && !this.sending;
      return trickCard(e.card, {
        class: `card trick-card${e.card.suit === 'H' || e.card.suit === 'D' ? ' suit-red' : ' suit-black'}${
          playable || bidding ? ' playable' : ' unplayable'}`,
        'data-playable': String(Boolean(e.playable)),
        // The accessible name holds what the card shows, its badge included.
        'aria-label': e.reason === 'MUST_FOLLOW_SUIT' ? `${e.card.face} ${t('tr_followSuit')}` : e.card.face,
        disabled: !(playable || (bidding && this.chosen.length < 3)),
        onclick: () => (bidding ? this.toggle(e.card.id) : this.send({ kind: 'play', card: e.card.id })),
      }, e.reason === 'MUST_FOLLOW_SUIT' ? h('span', { class: 'badge' }, t('tr_followSuit')) : null);
    })));
    return h('div', { class: 'trick-me' }, ...parts);
  }

  scoreTable(view) {
    if (!view.deals.length) return null;
    return h('details', { class: 'panel trick-scores', 'data-testid': 'trick-scores' },
      h('summary', {}, t('tr_scores')), dealsTable(view, (id) => this.name(id)));
  }

  toggle(cardId) {
    const at = this.chosen.indexOf(cardId);
    if (at >= 0) this.chosen.splice(at, 1);
    else if (this.chosen.length < 3) this.chosen.push(cardId);
    this.render(this.view);
  }

  placeBid() {
    if (this.chosen.length !== 3) return;
    this.send({ kind: 'bid', cards: [...this.chosen] });
  }

  send(action) {
    if (this.sending || !this.view) return;
    this.sending = true;
    this.actions.play({ trick: action }, this.view.seq);
    this.render(this.view);
  }

  /** The decision sent was applied: the next view says what is owed now. */
  played() {
    this.sending = false;
  }

  /** A refused play: choose again (the newer view, if any, is on its way). */
  playRefused() {
    this.sending = false;
    if (this.view) this.render(this.view);
  }

  tick() {
    const view = this.view;
    if (!view || view.phase === 'finished' || !view.deadline) {
      this.timer.textContent = '';
      return;
    }
    const left = Math.max(0, Math.ceil((view.deadline - this.actions.serverNow()) / 1000));
    this.timer.textContent = t('seconds', { n: left });
    this.timer.dataset.left = String(left);
  }
}

/** Each deal's contracts and points, one row per player and deal (the table and the results). */
export function dealsTable(view, name) {
  const mark = (made) => (made ? '✓' : '✗');
  return h('table', { class: 'deals-table', 'data-testid': 'deals-table' },
    h('thead', {}, h('tr', {},
      h('th', {}, t('tr_dealCol')), h('th', {}, t('tr_playerCol')), h('th', {}, t('tr_bidCol')),
      h('th', {}, t('tr_tricksCol')), h('th', {}, t('tr_pointsCol')), h('th', {}, t('tr_scoreCol')))),
    h('tbody', {}, ...view.deals.flatMap((d) => d.lines.map((ln, i) =>
      h('tr', { 'data-testid': 'deal-line', 'data-deal': d.deal, 'data-player': ln.player, 'data-made': String(ln.made) },
        h('td', {}, i === 0 ? String(d.deal) : ''),
        h('td', {}, name(ln.player), ln.player === d.declarer ? ` (${t('tr_declarer')})` : ''),
        h('td', {}, String(ln.bidTricks)),
        h('td', {}, `${ln.tricks} ${mark(ln.made)}`),
        h('td', {}, (ln.total >= 0 ? '+' : '') + ln.total),
        h('td', {}, String(ln.score)))))));
}

/** The results screen of a finished match: the ranking and every deal's contracts. */
export function renderTrickResults(view, { summary, ranking, deals, bot }) {
  const name = (id) => displayName(view.players.find((p) => p.id === id)?.name ?? id, bot(id));
  summary.textContent = lang() === 'en' ? view.result.summaryEn : view.result.summary;
  fill(ranking, ...view.result.ranking.map((r) =>
    h('li', { class: `rank-row${r.rank === 1 ? ' winner' : ''}${r.player === view.viewer ? ' me' : ''}`,
      'data-testid': 'ranking-row', 'data-player': r.player, 'data-rank': r.rank },
    h('span', { class: 'rank' }, t('rank', { n: r.rank })),
    h('span', { class: 'avatar small' }, avatarFor(view.players.find((p) => p.id === r.player)?.name, bot(r.player))),
    h('b', {}, name(r.player)),
    h('span', { class: 'muted' }, t('tr_points', { n: r.score })))));
  fill(deals, dealsTable(view, name));
  deals.hidden = false;
}
