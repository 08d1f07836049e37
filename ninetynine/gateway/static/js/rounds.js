// The table's pieces for 004 part III, "paranoia": the pair a tapped card makes, the card exchange
// in which everyone passes a card at once, and the banners of both and of scored crossings (hands
// counted at a round's end are the table's shared scoring strip). The rules stay on the server:
// these read only the view and the events.

import { h } from './dom.js';
import { t } from './i18n.js';

const SUITS = { S: '♠', H: '♥', D: '♦', C: '♣' };

/** A French card id ("JS-1") as its face ("J♠"); other ids as they are. */
export function faceOf(cardId) {
  const m = /^(A|[2-9]|10|J|Q|K)([SHDC])-/.exec(cardId);
  return m ? `${m[1]}${SUITS[m[2]]}` : cardId;
}

/** The legal pair plays the tapped card is part of (the view lists them in legalPlays). */
export function pairPlays(view, cardId) {
  return (view.legalPlays ?? []).filter(
    (lp) => lp.action.pairCardId && (lp.action.cardId === cardId || lp.action.pairCardId === cardId));
}

export function exchanging(view) {
  return view.phase === 'exchange';
}

/** Who the viewer passes to: the next player taking part, in the direction of play. */
export function passTarget(view) {
  const taking = [...view.players].filter((p) => p.passed !== undefined).sort((a, b) => a.seat - b.seat);
  const mine = taking.findIndex((p) => p.id === view.viewer);
  if (mine < 0 || taking.length < 2) return null;
  return taking[(mine + view.direction + taking.length) % taking.length].id;
}

/** The status line during an exchange: pick a card for the neighbour, or wait for the others. */
export function exchangeStatus(view, nameOf) {
  const target = passTarget(view);
  if (view.passing) {
    return h('div', { class: 'their-turn', 'data-testid': 'exchange-status', 'data-state': 'chosen' },
      t('passChosen', { face: faceOf(view.passing), name: target ? nameOf(target) : '' }));
  }
  if (view.myTurn && target) {
    // A decision owed, like a turn: the same hook as the turn's banner.
    return h('div', { class: 'my-turn', 'data-testid': 'my-turn' },
      h('span', { 'data-testid': 'exchange-status', 'data-state': 'owed' }, t('passPick', { name: nameOf(target) })));
  }
  return h('div', { class: 'their-turn', 'data-testid': 'exchange-status', 'data-state': 'watching' }, t('exchanging'));
}

/** An opponent's tag during an exchange: whether they have chosen (never which card). */
export function passTag(player) {
  if (player.passed === undefined) return null;
  return h('div', { class: `tag${player.passed ? '' : ' warn'}`, 'data-testid': 'pass-state', 'data-passed': String(player.passed) },
    t(player.passed ? 'passDone' : 'passOwed'));
}

/** The pair buttons of the choice panel, beside the card's own play. */
export function pairButtons(view, entry, button) {
  const faceIn = (id) => view.hand.find((e) => e.card.id === id)?.card.face ?? faceOf(id);
  return pairPlays(view, entry.card.id).map((lp) => {
    const other = lp.action.cardId === entry.card.id ? lp.action.pairCardId : lp.action.cardId;
    const reverse = lp.action.dir === 'reverse';
    const text = t(reverse ? 'pairReverseBtn' : 'pairBtn', { a: entry.card.face, b: faceIn(other), n: lp.result });
    return button(reverse ? 'choice-pair-reverse' : 'choice-pair', text, { legal: true, action: lp.action });
  });
}

export function signed(n) {
  return n > 0 ? `+${n}` : String(n).replace('-', '−');
}

/** The banner of one of paranoia's events, or null for an event that is not one of them. */
export function roundsBanner(event, nameOf) {
  switch (event.type) {
    case 'pairPlayed':
      return ['pairPlayed', t('bn_pairPlayed', { name: nameOf(event.player),
        cards: event.cards.map((c) => c.face).join(' '), total: event.total })];
    case 'exchangeStarted':
      return ['exchangeStarted', t('bn_exchangeStarted', { name: nameOf(event.by) })];
    case 'exchangeDone':
      return ['exchangeDone', t('bn_exchangeDone', { gave: event.gave.face, to: nameOf(event.to),
        received: event.received.face, from: nameOf(event.from) })];
    case 'pointsScored':
      return ['pointsScored', t('bn_pointsScored', { name: nameOf(event.player), n: signed(event.points), at: event.at })];
    default:
      return null;
  }
}
