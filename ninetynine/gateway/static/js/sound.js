// Short synthesized sounds (no audio files): a play, your turn, a lost life, the end. The mute
// switch is remembered on the device (localStorage). Browsers allow audio only after a gesture, so
// the AudioContext is made on the first tap.

const KEY = 'nn.sound';

// Each sound: [frequency Hz, start s, length s] notes of one short square/sine blip sequence.
const SOUNDS = {
  play: [[660, 0, 0.06]],
  turn: [[880, 0, 0.09], [1320, 0.11, 0.12]],
  lose: [[440, 0, 0.12], [330, 0.13, 0.12], [220, 0.26, 0.2]],
  end: [[523, 0, 0.1], [659, 0.11, 0.1], [784, 0.22, 0.1], [1047, 0.33, 0.25]],
};

export class Sound {
  constructor() {
    this.muted = localStorage.getItem(KEY) === 'off';
    this.ctx = null;
    this.played = []; // names of the sounds played, for the tests
    document.addEventListener('pointerdown', () => this.unlock(), { capture: true });
    document.addEventListener('keydown', () => this.unlock(), { capture: true });
  }

  unlock() {
    if (this.ctx || !window.AudioContext) return;
    try { this.ctx = new AudioContext(); } catch { this.ctx = null; }
  }

  setMuted(muted) {
    this.muted = muted;
    localStorage.setItem(KEY, muted ? 'off' : 'on');
  }

  play(name) {
    if (this.muted || !SOUNDS[name]) return;
    this.played.push(name);
    const ctx = this.ctx;
    if (!ctx) return;
    const now = ctx.currentTime;
    for (const [freq, at, length] of SOUNDS[name]) {
      const osc = ctx.createOscillator();
      const gain = ctx.createGain();
      osc.type = 'sine';
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.0001, now + at);
      gain.gain.exponentialRampToValueAtTime(0.18, now + at + 0.01);
      gain.gain.exponentialRampToValueAtTime(0.0001, now + at + length);
      osc.connect(gain).connect(ctx.destination);
      osc.start(now + at);
      osc.stop(now + at + length + 0.02);
    }
  }
}
