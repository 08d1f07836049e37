// Contract test in a second language: a Node client of ninetynine.engine.v1.EngineService.
// Usage: node tests/contract_node/contract.js HOST:PORT
// Sets up a game, plays it to the end by always sending the first legal play from View,
// checks the result and an error's ErrorInfo, and prints one JSON summary line.
'use strict';

const path = require('path');
const assert = require('assert');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_ROOT = path.resolve(__dirname, '..', '..', 'protos');
const definition = protoLoader.loadSync('ninetynine/engine/v1/engine_service.proto', {
  includeDirs: [PROTO_ROOT],
  keepCase: true, // snake_case field names, as in the .proto
  longs: String, // uint64 seq/seed/rng as decimal strings (no precision loss)
  enums: String,
  defaults: true,
  oneofs: true,
});
const v1 = grpc.loadPackageDefinition(definition).ninetynine.engine.v1;

function call(client, method, request) {
  return new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + 5000);
    client[method](request, { deadline }, (err, reply) => (err ? reject(err) : resolve(reply)));
  });
}

async function main() {
  const target = process.argv[2];
  assert.ok(target, 'usage: contract.js HOST:PORT');
  const client = new v1.EngineService(target, grpc.credentials.createInsecure());
  const players = ['ana', 'ben', 'cy'];

  const setup = await call(client, 'Setup', { player_ids: players, seed: '2024', options: { mode: 'MODE_KR_PRODUCT' } });
  let state = setup.state;
  assert.strictEqual(setup.events[0].payload, 'game_started');
  assert.deepStrictEqual(setup.events[0].game_started.seats, players);

  let moves = 0;
  while (state.phase === 'PHASE_PLAYING') {
    assert.ok(moves < 1000, 'the game must end');
    const { view } = await call(client, 'View', { state, viewer_id: state.current });
    assert.ok(view.my_turn, 'the current player sees my_turn');
    assert.ok(view.legal_plays.length > 0, 'the current player has a legal play');
    const play = view.legal_plays[0];
    const applied = await call(client, 'Apply', {
      state, player_id: state.current, action: play.action, expected_seq: state.seq,
    });
    const played = applied.events.find((e) => e.payload === 'card_played');
    assert.strictEqual(played.card_played.total, play.result_total);
    assert.strictEqual(BigInt(applied.state.seq), BigInt(state.seq) + 1n);
    state = applied.state;
    moves += 1;
  }

  const { view } = await call(client, 'View', { state, viewer_id: 'ana' });
  assert.strictEqual(view.phase, 'PHASE_FINISHED');
  assert.strictEqual(view.seed, '2024');
  assert.deepStrictEqual(view.result.winner, [state.current]);
  assert.deepStrictEqual(view.result.ranking.map((r) => r.rank), [1, 2, 3]);

  // A refusal carries a google.rpc.Status with one ErrorInfo in grpc-status-details-bin.
  let refusal;
  try {
    await call(client, 'Apply', { state, player_id: state.current, action: { card_id: 'N1-1' } });
  } catch (err) {
    refusal = err;
  }
  assert.ok(refusal, 'playing in a finished game is refused');
  assert.strictEqual(refusal.code, grpc.status.FAILED_PRECONDITION);
  const details = refusal.metadata.get('grpc-status-details-bin');
  assert.strictEqual(details.length, 1);
  assert.ok(details[0].toString('latin1').includes('GAME_FINISHED'));
  assert.ok(details[0].toString('latin1').includes('engine.ninetynine'));

  client.close();
  console.log(JSON.stringify({ ok: true, moves, winner: state.current, summary: view.result.summary }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
