// "공정성 확인": re-runs the engine's documented deal (ninetynine/engine/rules/rng.py, cards.py,
// game.py `setup`/`_deal`) from the seed a finished game reveals, in the browser, and compares it
// with what was published and played: SHA-256 of the seed (8 bytes, big-endian) against the
// gameStarted commitment, the first player, and every first-round hand.

const MASK64 = (1n << 64n) - 1n;
const MASK32 = (1n << 32n) - 1n;
const MULTIPLIER = 6364136223846793005n;
const STREAM = 54n;

/** PCG32 (XSH-RR 64/32), seeded like pcg32_srandom_r(seed, 54). */
export class Pcg32 {
  constructor(seed) {
    this.inc = ((STREAM << 1n) | 1n) & MASK64;
    this.state = this.inc;
    this.state = (this.state + (BigInt(seed) & MASK64)) & MASK64;
    this.state = (this.state * MULTIPLIER + this.inc) & MASK64;
  }

  next32() {
    const old = this.state;
    this.state = (old * MULTIPLIER + this.inc) & MASK64;
    const x = (((old >> 18n) ^ old) >> 27n) & MASK32;
    const rot = old >> 59n;
    return Number(((x >> rot) | (x << ((32n - rot) & 31n))) & MASK32);
  }

  below(bound) {
    const threshold = (2 ** 32 - bound) % bound;
    for (;;) {
      const r = this.next32();
      if (r >= threshold) return r % bound;
    }
  }

  shuffle(items) {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.below(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
  }
}

/** The unshuffled deck's card ids in the engine's canonical order (spec §3, cards.py). */
export function canonicalDeck(mode, specialCounts, deckCount) {
  const ids = [];
  if (mode === 'kr-product') {
    for (let v = 1; v <= 8; v++) for (let i = 1; i <= 7; i++) ids.push(`N${v}-${i}`);
    for (let i = 1; i <= 21; i++) ids.push(`N10-${i}`);
    for (const kind of ['PM9', 'PM10', 'Z']) for (let i = 1; i <= specialCounts; i++) ids.push(`${kind}-${i}`);
    ids.push('J-1', 'J-2');
    return ids;
  }
  const ranks = ['A', '2', '3', '4', '5', '6', '7', '8', '9', '10', 'J', 'Q', 'K'];
  for (let d = 1; d <= deckCount; d++) for (const suit of 'SHDC') for (const r of ranks) ids.push(`${r}${suit}-${d}`);
  return ids;
}

function deckCountFor(started) {
  const { options } = started;
  if (options.mode === 'kr-product') return 1;
  // A preset's French decks follow its own table by player count, which the replay does not carry:
  // the published deck size says how many 52-card decks were shuffled.
  if (started.rules) return Math.max(1, Math.round(started.deckSize / 52));
  if (options.deckCount === 'auto') return started.seats.length >= 7 ? 2 : 1;
  return Number(options.deckCount);
}

/** The seed as the 8 big-endian bytes the commitment hashes. */
function seedBytes(seed) {
  const bytes = new Uint8Array(8);
  let v = BigInt(seed) & MASK64;
  for (let i = 7; i >= 0; i--) { bytes[i] = Number(v & 0xffn); v >>= 8n; }
  return bytes;
}

const K = Uint32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/**
 * SHA-256 of a short message (one 64-byte block: up to 55 bytes), written out because
 * crypto.subtle exists only in secure contexts and a table on a LAN address is plain http.
 */
export function sha256Hex(bytes) {
  if (bytes.length > 55) throw new Error('one block only');
  const block = new Uint8Array(64);
  block.set(bytes);
  block[bytes.length] = 0x80;
  new DataView(block.buffer).setUint32(60, bytes.length * 8);
  const w = new Uint32Array(64);
  const view = new DataView(block.buffer);
  for (let i = 0; i < 16; i++) w[i] = view.getUint32(i * 4);
  const rotr = (x, n) => (x >>> n) | (x << (32 - n));
  for (let i = 16; i < 64; i++) {
    const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
    const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
    w[i] = (w[i - 16] + s0 + w[i - 7] + s1) >>> 0;
  }
  const hv = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
  let [a, b, c, d, e, f, g, hh] = hv;
  for (let i = 0; i < 64; i++) {
    const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) >>> 0;
    const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
    [hh, g, f, e, d, c, b, a] = [g, f, e, (d + t1) >>> 0, c, b, a, (t1 + t2) >>> 0];
  }
  return [a, b, c, d, e, f, g, hh].map((x, i) => ((x + hv[i]) >>> 0).toString(16).padStart(8, '0')).join('');
}

/**
 * Re-run the deal of a replay. Returns every check with what was computed and what was played;
 * `ok` only when all agree.
 */
export function verifyDeal(replay) {
  const events = replay.events.map((e) => e.event);
  const started = events.find((e) => e.type === 'gameStarted');
  const round1 = events.find((e) => e.type === 'roundStarted');
  if (!started || !round1 || replay.seed === undefined) return { ok: false, checks: [] };
  const seats = started.seats;
  const seed = BigInt(replay.seed);
  const computedCommitment = sha256Hex(seedBytes(seed));
  const pile = canonicalDeck(started.options.mode, Number(started.options.specialCounts), deckCountFor(started));
  const rng = new Pcg32(seed);
  rng.shuffle(pile);
  const deckSize = pile.length;
  const first = seats[rng.below(seats.length)];
  const hands = Object.fromEntries(seats.map((p) => [p, []]));
  const order = seats.map((_, k) => seats[(seats.indexOf(first) + k) % seats.length]);
  for (let n = 0; n < started.handSize; n++) for (const p of order) if (pile.length) hands[p].push(pile.pop());
  const dealt = Object.fromEntries(events.filter((e) => e.type === 'handDealt' && e.round === 1)
    .map((e) => [e.player, e.cards.map((c) => c.id)]));
  const checks = [
    { kind: 'commitment', ok: computedCommitment === started.seedCommitment,
      computed: computedCommitment, published: started.seedCommitment },
    { kind: 'deckSize', ok: deckSize === started.deckSize, computed: deckSize, published: started.deckSize },
    { kind: 'starter', ok: first === round1.starter, computed: first, published: round1.starter },
    ...seats.map((p) => ({ kind: 'hand', player: p, ok: JSON.stringify(hands[p]) === JSON.stringify(dealt[p] ?? null),
      computed: hands[p], published: dealt[p] ?? [] })),
  ];
  return { ok: checks.every((c) => c.ok), checks };
}
