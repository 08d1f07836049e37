// The game table (spec §9): big total with a gauge ring and a timer ring, opponents on top, direction
// arrow, own hand at the bottom with tap-to-preview / tap-again-to-play and the choice panels.
// Everything shown comes from the server's view: legality, previews and refusal reasons included.

import { $, fill, h, svg } from './dom.js';
import { badgeFor, t } from './i18n.js';

const GAUGE_R = 96;
const TIMER_R = 114;
const CIRC = (r) => 2 * Math.PI * r;

/** Colour of the gauge: green -> yellow -> red as the total nears 99 (hue 130 -> 0). */
export function gaugeColor(total) {
  const x = Math.min(1, Math.max(0, total / 99));
  const hue = Math.round(130 * (1 - x ** 1.6));
  return `hsl(${hue} 75% 45%)`;
}

export function gaugeLevel(total) {
  return total >= 90 ? 'high' : total >= 70 ? 'mid' : 'low';
}

export class Table {
  /**
   * @param {HTMLElement} root the #screen-table element
   * @param {{play: (action: object, moveSeq: number) => void, toast: (text: string, reason?: string) => void}} actions
   */
  constructor(root, actions) {
    this.root = root;
    this.actions = actions;
    this.view = null;
    this.seats = new Map(); // playerId -> {connected, bot} from `room`
    this.selected = null; // card id tapped once
    this.jokerValue = null;
    this.shownTotal = null;
    this.countUp = null;
    this.turnKey = null;
    this.turnLocalStart = 0;
    this.sending = false;
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
    this.gaugeSvg = svg('svg', { viewBox: '0 0 260 260', class: 'gauge', 'data-testid': 'gauge' },
      ring(TIMER_R, 'timer-track'), this.timerArc, ring(GAUGE_R, 'gauge-track'), this.gaugeArc);
    this.timerBox = h('div', { class: 'timer', 'data-testid': 'timer' });
    this.totalEl = h('div', { class: 'total', 'data-testid': 'total', 'aria-live': 'polite' }, '0');
    this.arrow = h('div', { class: 'direction', 'data-testid': 'direction' },
      svg('svg', { viewBox: '0 0 48 48', width: 44, height: 44 },
        svg('path', { d: 'M40 24a16 16 0 1 1-6-12.5', fill: 'none', stroke: 'currentColor', 'stroke-width': 4, 'stroke-linecap': 'round' }),
        svg('path', { d: 'M36 4l-1 10-10-1', fill: 'none', stroke: 'currentColor', 'stroke-width': 4, 'stroke-linecap': 'round', 'stroke-linejoin': 'round' })));
    this.dirLabel = h('div', { class: 'dir-label' });
    this.opponents = h('div', { class: 'opponents' });
    this.status = h('div', { class: 'turn-status' });
    this.recent = h('ol', { class: 'recent', 'data-testid': 'recent-plays' });
    this.panel = h('div', { class: 'choice-panel' });
    this.hand = h('div', { class: 'hand', 'data-testid': 'hand' });
    this.info = h('div', { class: 'table-info' });
    const centre = h('div', { class: 'centre' }, this.timerBox, this.gaugeSvg, this.totalEl);
    fill(this.root,
      this.opponents,
      h('div', { class: 'middle' }, h('div', { class: 'dir-box' }, this.arrow, this.dirLabel), centre, this.info),
      this.status,
      this.recent,
      this.panel,
      this.hand,
    );
  }

  setRoom(room) {
    this.seats = new Map(room.seats.map((s) => [s.playerId, s]));
    if (this.view) this.renderOpponents(this.view, null);
  }

  /**
   * A play of ours was refused: let the hand act again, unless the refusal says the game has moved
   * past the view on screen (VIEW_OUTDATED) — the newer view is on its way and unlocks it itself.
   */
  playRefused(reason, currentMoveSeq) {
    if (reason === 'VIEW_OUTDATED' && this.view && this.view.seq < currentMoveSeq) return;
    this.sending = false;
  }

  /** Render a new view; `previous` (if any) drives the animations. */
  render(view) {
    const previous = this.view;
    this.view = view;
    if (!view.myTurn || (previous && previous.seq !== view.seq)) this.sending = false;
    if (this.selected && !view.hand?.some((e) => e.card.id === this.selected)) this.selected = null;
    this.renderTotal(view.total);
    this.renderDirection(view.direction, previous?.direction);
    this.renderOpponents(view, previous);
    this.renderStatus(view, previous);
    this.renderRecent(view);
    this.renderHand(view);
    this.renderPanel(view);
    fill(this.info,
      h('div', {}, t('round', { n: view.round })),
      h('div', {}, t('drawPile', { n: view.drawPileCount })),
    );
    const key = `${view.current}:${view.turnStartedAt}`;
    if (key !== this.turnKey) {
      this.turnKey = key;
      this.turnLocalStart = Date.now();
    }
    this.timerBox.dataset.deadline = String(view.deadline);
  }

  renderTotal(total) {
    this.totalEl.dataset.value = String(total);
    const from = this.shownTotal ?? total;
    this.shownTotal = total;
    this.countUp = { from, to: total, start: performance.now(), ms: Math.min(700, 60 + Math.abs(total - from) * 25) };
    const color = gaugeColor(total);
    this.gaugeArc.setAttribute('stroke', color);
    this.gaugeArc.setAttribute('stroke-dashoffset', String(CIRC(GAUGE_R) * (1 - Math.min(total, 99) / 99)));
    this.gaugeSvg.dataset.level = gaugeLevel(total);
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
  }

  renderOpponents(view, previous) {
    const others = view.players.filter((p) => p.id !== view.viewer);
    const showLives = view.players.some((p) => p.lives > 0 || p.livesLost > 0);
    fill(this.opponents,
      ...others.map((p) => {
        const before = previous?.players.find((q) => q.id === p.id);
        const seat = this.seats.get(p.id);
        const connected = seat ? seat.connected : true;
        const current = view.phase === 'playing' && view.current === p.id;
        const hearts = [];
        for (let i = 0; i < p.lives; i++) hearts.push(h('span', { class: 'heart' }, '♥'));
        if (before && before.lives > p.lives) hearts.push(h('span', { class: 'heart breaking' }, '♥'));
        return h('div', {
          class: `opponent${current ? ' current' : ''}${p.alive ? '' : ' out'}${connected ? '' : ' offline'}`,
          'data-testid': `opponent-${p.id}`, 'data-current': String(current),
          'data-alive': String(p.alive), 'data-connected': String(connected),
        },
          h('div', { class: 'avatar' }, avatarLetter(p.name), seat?.bot ? h('span', { class: 'bot-tag' }, 'BOT') : null),
          h('div', { class: 'opp-name' }, p.name),
          h('div', { class: 'opp-meta' },
            h('span', { class: 'hand-count', 'data-testid': 'hand-count' }, `🂠 ${t('handCount', { n: p.handCount })}`),
            showLives ? h('span', { class: 'lives', 'data-testid': 'lives', 'data-lives': p.lives }, hearts.length ? hearts : '–') : null),
          !p.alive ? h('div', { class: 'tag' }, t('eliminatedTag')) : !connected ? h('div', { class: 'tag' }, t('disconnected')) : null,
        );
      }),
    );
  }

  renderStatus(view, previous) {
    const me = view.players.find((p) => p.id === view.viewer);
    const hearts = me && (me.lives > 0 || me.livesLost > 0)
      ? h('span', { class: 'my-lives', 'data-testid': 'my-lives' }, '♥'.repeat(me.lives) || '♡') : null;
    if (view.myTurn) {
      fill(this.status, h('div', { class: 'my-turn', 'data-testid': 'my-turn' }, t('myTurn')), hearts);
      if (!previous?.myTurn && navigator.vibrate) navigator.vibrate([120, 60, 120]);
    } else {
      const who = view.players.find((p) => p.id === view.current);
      const text = view.viewer === null ? `${t('spectating')} · ${t('turnOf', { name: who?.name ?? '' })}` : t('turnOf', { name: who?.name ?? '' });
      fill(this.status, h('div', { class: 'their-turn' }, text), hearts);
    }
  }

  renderRecent(view) {
    const name = (id) => view.players.find((p) => p.id === id)?.name ?? id;
    fill(this.recent,
      ...view.recentPlays.slice(-3).reverse().map((r) =>
        h('li', {}, h('b', {}, name(r.player)), ` ${r.face}${choiceText(r.choice)} → ${r.total}`)),
    );
  }

  renderHand(view) {
    if (!view.hand) {
      fill(this.hand);
      return;
    }
    fill(this.hand,
      ...view.hand.map((entry) => {
        const { card } = entry;
        const selected = this.selected === card.id;
        const firstRefusal = entry.choices.find((c) => !c.legal)?.reason;
        return h('button', {
          class: `card kind-${card.kind}${entry.playable ? '' : ' unplayable'}${selected ? ' selected' : ''}`,
          'data-testid': `card-${card.id}`, 'data-playable': String(entry.playable),
          'data-selected': selected ? 'true' : null, type: 'button',
          onclick: () => this.tapCard(entry),
        },
          h('span', { class: 'face' }, card.kind === 'joker' ? '🃏' : card.face),
          card.kind === 'joker' ? h('span', { class: 'sub' }, 'JOKER') : null,
          !entry.playable ? h('span', { class: 'badge', 'data-testid': 'card-badge' }, badgeFor(firstRefusal)) : null,
        );
      }),
    );
  }

  tapCard(entry) {
    const { view } = this;
    if (this.selected === entry.card.id && entry.choices.length === 1) {
      if (!view.myTurn) return this.actions.toast(t('notYourTurn'));
      const choice = entry.choices[0];
      if (choice.legal && !this.sending) this.send(choice.action);
      return;
    }
    this.selected = this.selected === entry.card.id ? null : entry.card.id;
    if (entry.jokerRange) {
      const { min, max } = entry.jokerRange;
      this.jokerValue = Math.min(max, Math.max(min, this.jokerValue ?? Math.max(min, Math.min(max, view.total))));
    }
    this.renderHand(view);
    this.renderPanel(view);
  }

  send(action) {
    this.sending = true;
    // The move counter of the view on screen: the server refuses the play (VIEW_OUTDATED) instead
    // of applying it at another total if the game moved on meanwhile (a timeout, another device).
    this.actions.play(action, this.view.seq);
    this.selected = null;
    this.renderHand(this.view);
    this.renderPanel(this.view);
  }

  renderPanel(view) {
    const entry = view.hand?.find((e) => e.card.id === this.selected);
    if (!entry) {
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
        button('choice-plus', t('plusBtn', { v: card.value, n: plus.result }), plus),
        button('choice-minus', t('minusBtn', { v: card.value, n: minus.result }), minus),
      );
    } else if (card.kind === 'zero' && entry.choices.length === 2) {
      const keep = find((a) => a.dir === 'keep');
      const reverse = find((a) => a.dir === 'reverse');
      fill(this.panel,
        button('choice-keep', t('keepBtn', { n: keep.result }), keep),
        button('choice-reverse', t('reverseBtn', { n: reverse.result }), reverse),
      );
    } else if (card.kind === 'ace') {
      const [low, high] = entry.choices;
      fill(this.panel,
        button('choice-ace-1', t('aceBtn', { v: low.action.aceValue, n: low.result }), low),
        button('choice-ace-high', t('aceBtn', { v: high.action.aceValue, n: high.result }), high),
      );
    } else if (entry.jokerRange) {
      fill(this.panel, this.jokerDial(entry, canAct));
    } else {
      const choice = entry.choices[0];
      fill(this.panel,
        h('div', { class: `preview${choice.legal ? '' : ' refused'}`, 'data-testid': 'preview' },
          choice.legal ? t('play', { n: choice.result }) : `${t('play', { n: choice.result })} · ${badgeFor(choice.reason)}`,
          choice.legal && canAct ? h('small', {}, t('playHint')) : null),
      );
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
        h('button', { type: 'button', class: 'round-btn', 'data-testid': 'joker-dec', onclick: () => set(this.jokerValue - 1), disabled: this.jokerValue <= min }, '−'),
        h('div', { class: 'dial-value', 'data-testid': 'joker-value', 'data-value': this.jokerValue, style: `color:${gaugeColor(this.jokerValue)}` }, this.jokerValue),
        h('button', { type: 'button', class: 'round-btn', 'data-testid': 'joker-inc', onclick: () => set(this.jokerValue + 1), disabled: this.jokerValue >= max }, '+')),
      h('input', { type: 'range', min, max, value: this.jokerValue, class: 'dial-range', 'aria-label': t('jokerTitle'),
        oninput: (e) => set(Number(e.target.value)) }),
      h('div', { class: 'quick' }, ...quick.map((v) =>
        h('button', { type: 'button', class: `chip${v === this.jokerValue ? ' on' : ''}`, 'data-testid': `joker-quick-${v}`, onclick: () => set(v) }, v))),
      h('button', { type: 'button', class: 'choice primary', 'data-testid': 'play-joker', disabled: !canAct,
        onclick: () => this.send({ ...base, jokerValue: this.jokerValue }) }, t('playJoker', { n: this.jokerValue })),
    );
  }

  /** Animation frame: total count-up and the timer ring. */
  tick(now) {
    if (this.countUp) {
      const { from, to, start, ms } = this.countUp;
      const x = Math.min(1, (now - start) / ms);
      const eased = 1 - (1 - x) ** 3;
      this.totalEl.textContent = String(Math.round(from + (to - from) * eased));
      if (x >= 1) this.countUp = null;
    }
    const view = this.view;
    if (view && view.phase === 'playing') {
      // The server clock may differ from ours: measure the turn from when we first saw it.
      const duration = Math.max(1, view.deadline - view.turnStartedAt);
      const left = Math.max(0, duration - (Date.now() - this.turnLocalStart));
      const fraction = left / duration;
      this.timerArc.setAttribute('stroke-dashoffset', String(CIRC(TIMER_R) * (1 - fraction)));
      this.timerArc.classList.toggle('urgent', left < 5000);
      this.timerBox.textContent = view.myTurn ? `${Math.ceil(left / 1000)}` : '';
    }
    requestAnimationFrame(this.tick);
  }
}

export function avatarLetter(name) {
  return Array.from(name ?? '?')[0]?.toUpperCase() ?? '?';
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
