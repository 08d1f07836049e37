// Replay of a finished game: folds the server's event log into one frame per event. This is
// bookkeeping of what the events say (totals, counts, lives), not rules: nothing is computed that the
// events do not state.

import { fill, h } from './dom.js';
import { t } from './i18n.js';
import { choiceText, gaugeColor } from './table.js';

export function buildFrames(replay) {
  const names = new Map(replay.players.map((p) => [p.id, p.name]));
  const state = {
    total: 0, direction: 1, current: null, round: 1,
    players: replay.players.map((p) => ({ id: p.id, name: p.name, hand: [], handCount: 0, lives: 0, alive: true })),
  };
  const player = (id) => state.players.find((p) => p.id === id);
  const frames = [];
  for (const { seq, event } of replay.events) {
    let text = '';
    const name = names.get(event.player) ?? event.player;
    switch (event.type) {
      case 'gameStarted':
        for (const p of state.players) p.lives = event.lives;
        text = t('ev_gameStarted', { n: event.seats.length });
        break;
      case 'handDealt':
        player(event.player).hand = event.cards.map((c) => c.face);
        player(event.player).handCount = event.cards.length;
        text = t('ev_handDealt', { name });
        break;
      case 'roundStarted':
        state.total = event.total;
        state.round = event.round;
        state.current = event.starter;
        for (const p of state.players) {
          p.handCount = event.handCounts[p.id] ?? 0;
          if (!(p.id in event.handCounts)) p.hand = [];
        }
        text = t('ev_roundStarted', { round: event.round, total: event.total });
        break;
      case 'turnStarted':
        state.current = event.player;
        state.total = event.total;
        text = t('ev_turnStarted', { name });
        break;
      case 'cardPlayed': {
        const p = player(event.player);
        const i = p.hand.indexOf(event.face);
        if (i >= 0) p.hand.splice(i, 1);
        p.handCount = Math.max(0, p.handCount - 1);
        state.total = event.total;
        text = t('ev_cardPlayed', { name, face: event.face, choice: choiceText(event.choice), total: event.total });
        break;
      }
      case 'directionChanged':
        state.direction = event.direction;
        text = t('ev_directionChanged');
        break;
      case 'cardDrawn': {
        const p = player(event.player);
        if (event.card) p.hand.push(event.card.face);
        p.handCount += 1;
        text = t('ev_cardDrawn', { name });
        break;
      }
      case 'reshuffled':
        text = t('ev_reshuffled');
        break;
      case 'lifeLost':
        player(event.player).lives = event.left;
        text = t('ev_lifeLost', { name, left: event.left });
        break;
      case 'eliminated': {
        const p = player(event.player);
        p.alive = false;
        p.hand = [];
        p.handCount = 0;
        text = t('ev_eliminated', { name });
        break;
      }
      case 'gameFinished':
        state.total = event.finalTotal;
        text = t('ev_gameFinished');
        break;
      default:
        continue;
    }
    frames.push({ seq, type: event.type, text, snapshot: structuredClone(state) });
  }
  return frames;
}

export function renderFrame(container, frame, index, count) {
  const s = frame.snapshot;
  fill(container,
    h('div', { class: 'replay-total', style: `color:${gaugeColor(s.total)}` }, s.total),
    h('div', { class: 'replay-text' }, frame.text),
    h('div', { class: 'replay-step', 'data-testid': 'replay-step' }, t('replayStep', { i: index + 1, n: count })),
    h('ul', { class: 'replay-players' },
      ...s.players.map((p) =>
        h('li', { class: `${p.alive ? '' : 'out'}${p.id === s.current ? ' current' : ''}` },
          h('span', { class: 'avatar small' }, Array.from(p.name)[0] ?? '?'),
          h('b', {}, p.name),
          p.lives > 0 ? h('span', { class: 'lives' }, '♥'.repeat(p.lives)) : null,
          h('span', { class: 'mini-hand' }, p.hand.length ? p.hand.join(' ') : `🂠 ${p.handCount}`)))),
  );
}
