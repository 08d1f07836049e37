// Replay of a finished game on the table itself: the server's event log is folded into one step per
// move (a card played and everything it caused: draws, lost lives, eliminations, a new round), each
// with the public view of the table after it. Stepping forward feeds the step's events to the table
// (the card flies to the pile, banners), stepping back just shows the view. This is bookkeeping of
// what the events say (totals, counts, lives), not rules: nothing is computed the events do not state.

import { t } from './i18n.js';
import { choiceText, faceText, num } from './table.js';

const RECENT = 3;

export function buildFrames(replay) {
  const names = new Map(replay.players.map((p) => [p.id, p.name]));
  const started = replay.events.find((e) => e.event.type === 'gameStarted')?.event;
  const seats = started?.seats ?? replay.players.map((p) => p.id);
  const state = {
    total: 0, direction: 1, current: null, round: 1, drawPileCount: 0, recentPlays: [], obligation: 0,
    players: seats.map((id, seat) => ({
      id, name: names.get(id) ?? id, seat, handCount: 0, lives: started?.lives ?? 0, alive: true,
      onBoard: false, livesLost: 0, eliminatedAtRound: null,
    })),
  };
  const player = (id) => state.players.find((p) => p.id === id);
  const view = () => ({
    mode: started?.mode, options: started?.options ?? {}, phase: 'playing', round: state.round,
    total: state.total, direction: state.direction, current: state.current, turnStartedAt: 0, deadline: 0,
    players: structuredClone(state.players), drawPileCount: state.drawPileCount,
    recentPlays: state.recentPlays.slice(-RECENT), viewer: null, seq: state.recentPlays.length,
    ...(state.obligation ? { obligation: state.obligation } : {}),
  });
  const frames = [];
  let step = { seq: 0, text: '', events: [] };
  const close = () => {
    if (step.events.length) frames.push({ ...step, view: view() });
  };
  for (const { seq, event } of replay.events) {
    const name = names.get(event.player) ?? event.player;
    if (event.type === 'cardPlayed') { // a new move starts a new step
      close();
      step = { seq, text: t('ev_cardPlayed', { name, face: faceText(event.face), choice: choiceText(event.choice), total: num(event.total) }), events: [] };
    }
    if (event.type === 'cardsDiscarded') { // 003's exchange is a move of its own
      close();
      step = { seq, text: t('ev_cardsDiscarded', { name, n: event.cards.length }), events: [] };
    }
    step.events.push(event);
    switch (event.type) {
      case 'gameStarted':
        step.text = t('ev_gameStarted', { n: event.seats.length });
        break;
      case 'handDealt':
        player(event.player).handCount = event.cards.length;
        break;
      case 'roundStarted':
        state.total = event.total;
        state.round = event.round;
        state.current = event.starter;
        state.drawPileCount = event.drawPileCount;
        for (const p of state.players) p.handCount = event.handCounts[p.id] ?? 0;
        if (event.reason !== 'setup') step.text += ` · ${t('ev_roundStarted', { round: event.round, total: num(event.total) })}`;
        break;
      case 'turnStarted':
        state.current = event.player;
        state.total = event.total;
        break;
      case 'cardPlayed': {
        state.obligation = 0; // the events of this move say what is owed after it
        const p = player(event.player);
        p.handCount = Math.max(0, p.handCount - 1);
        state.total = event.total;
        state.recentPlays.push({ player: event.player, cardId: event.cardId, face: event.face,
          before: event.before, total: event.total, choice: event.choice });
        break;
      }
      case 'directionChanged':
        state.direction = event.direction;
        break;
      case 'obligationPassed':
        state.obligation = event.cards;
        step.text += ` · ${t('ev_obligationPassed', { name })}`;
        break;
      case 'secondCardOwed':
        state.obligation = 1;
        break;
      case 'cardsDiscarded': {
        const p = player(event.player);
        p.handCount = Math.max(0, p.handCount - event.cards.length);
        break;
      }
      case 'cardDrawn':
        player(event.player).handCount += 1;
        state.drawPileCount = Math.max(0, state.drawPileCount - 1);
        break;
      case 'reshuffled':
        state.drawPileCount = event.count;
        break;
      case 'lifeLost': {
        state.obligation = 0; // a loss ends the debt
        const p = player(event.player);
        p.lives = event.left;
        p.livesLost += 1;
        step.text += ` · ${t('ev_lifeLost', { name, left: event.left })}`;
        break;
      }
      case 'eliminated': {
        state.obligation = 0;
        const p = player(event.player);
        p.alive = false;
        p.handCount = 0;
        p.eliminatedAtRound = event.round;
        step.text += ` · ${t('ev_eliminated', { name })}`;
        break;
      }
      case 'tokensPaid':
        player(event.player).lives = event.left;
        step.text += ` · ${t('ev_tokensPaid', { name, n: event.tokens, left: event.left })}`;
        break;
      case 'handScored':
        step.text += ` · ${t('ev_handScored', { name, points: event.points })}`;
        break;
      case 'turnSkipped':
        step.text += ` · ${t('ev_turnSkipped', { name })}`;
        break;
      case 'playAgain':
        step.text += ` · ${t('ev_playAgain', { name })}`;
        break;
      case 'gameFinished':
        state.total = event.finalTotal;
        state.current = null;
        step.text += ` · ${t('ev_gameFinished')}`;
        break;
      default:
        break;
    }
  }
  close();
  return frames;
}

/**
 * Show step `index` on the replay table; `forward` (one step on) replays its events' effects.
 * The table shows what a spectator saw at that moment.
 */
export function renderFrame(table, frame, forward) {
  table.render(frame.view); // first, so the events below find the names and the seats
  if (forward) for (const event of frame.events) table.onEvent(event);
}
