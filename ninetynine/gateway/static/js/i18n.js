// UI texts: Korean by default (the spec's wording, §9), English switchable. No rules live here:
// refusal codes come from the server's view and are only turned into short badge words.

const TEXTS = {
  ko: {
    title: '99 넘기지 마!',
    tagline: '차례대로 카드를 내며 더해요. 99를 넘기면 안 돼요!',
    yourName: '내 이름',
    namePlaceholder: '이름 (최대 24자)',
    createTitle: '새 방 만들기',
    preset: '변형 규칙', presetNone: '기본 (아래 규칙)', houseRules: '하우스 룰',
    houseRulesHint: '예: card.8=reverse, tokens=5',
    bn_skipped: '⏭️ {by} 님이 {name} 님 차례를 건너뛰었어요',
    bn_playAgain: '🔁 {name} 님이 한 번 더 내요',
    bn_roundScored: '★ {round}라운드 점수를 더했어요',
    bn_startCard: '🂠 시작 카드 {face}: 합계 {total}부터',
    bn_specialWin: '👑 {name} 님이 {rank} {n}장으로 바로 이겼어요',
    bn_specialAll: '💥 {name} 님의 {rank} {n}장: 모두 졌어요',
    bn_tokensPaid: '🪙 {name} 님이 토큰 {n}개를 냈어요 ({at}, 남은 {left}개)',
    bn_tokensPaidSelf: '🪙 {name} 님이 {at}을(를) 넘겨 토큰 {n}개를 냈어요 (남은 {left}개)',
    mode: '규칙', modeKr: '구십구 (kr-product)', modeClassic: '트럼프 99 (classic)',
    seats: '인원', lives: '목숨', handSize: '손패 장수', turnSeconds: '턴 시간',
    jokerRange: '조커 범위', startTotal: '시작 숫자', floorAtZero: '0 미만 빼기',
    afterElimination: '탈락 뒤 합계', onTheBoard: '목숨 0에서 한 번 더', refill: '낸 뒤 1장 보충',
    auto: '자동', livesNone: '없음 (바로 탈락)', seconds: '{n}초', cards: '{n}장', people: '{n}명',
    startAuto: '시작 카드 (2명 40, 3명 20)', startZero: '항상 0',
    forbid: '못 냄', clamp: '0으로 맞춤', continue: '그대로 이어 감', reset: '시작 숫자로',
    on: '켜기', off: '끄기', advanced: '더 많은 설정',
    kidPreset: '어린이 방 추천 (조커 0~99, 손패 5장)', kidApplied: '어린이 방 설정을 골랐어요',
    create: '방 만들기',
    joinTitle: '코드로 들어가기', roomCode: '방 코드', join: '참가', spectate: '관전',
    openRooms: '열린 방', refresh: '새로고침', noRooms: '열린 방이 없어요',
    waiting: '기다리는 중', playing: '게임 중', finished: '끝남',
    waitingRoom: '대기실', shareCode: '친구에게 이 코드를 알려 주세요',
    addBot: '봇 추가', start: '게임 시작', leave: '나가기', host: '방장', bot: '봇', empty: '빈 자리',
    spectators: '관전 {n}명', waitHost: '방장이 시작하기를 기다려요',
    myTurn: '내 차례!', turnOf: '{name} 님 차례', spectating: '관전 중',
    handCount: '{n}장', disconnected: '연결 끊김', eliminatedTag: '탈락',
    play: '내면 → {n}', playHint: '한 번 더 누르면 내요',
    plusBtn: '+{v} → {n}', minusBtn: '−{v} → {n}',
    keepBtn: '방향 그대로 → {n}', reverseBtn: '방향 바꾸기 → {n}',
    aceBtn: 'A = {v} → {n}',
    jokerTitle: '조커로 만들 숫자', playJoker: '조커 내기 → {n}',
    badge_OVER_99: '99 초과', badge_BELOW_ZERO: '0 미만', badge_other: '낼 수 없음',
    recent: '최근', drawPile: '더미 {n}장', round: '{n}라운드',
    dirCw: '시계 방향', dirCcw: '반시계 방향',
    help: '도움말', helpRule: '99를 넘기면 안 돼요!',
    helpBody: '차례마다 카드 1장을 내고 합계를 말해요. 낼 카드가 없으면 탈락(또는 목숨 1개를 잃어요). 마지막까지 남은 사람이 이겨요.',
    helpCard: '카드', helpEffect: '효과',
    help_num: '그 숫자만큼 더해요', help_pm9: '9를 더하거나 빼요', help_pm10: '10을 더하거나 빼요',
    help_zero: '그대로. 방향을 그대로 둘지 바꿀지 골라요', help_joker: '60~99 중 원하는 숫자로 만들어요',
    helpHouseRules: '하우스 룰: {rules}', help_classicTitle: '트럼프 99', help_A: '1 또는 11', help_4: '0, 방향 반대', help_9: '0, 그냥 넘김',
    help_10: '10을 빼요', help_JQ: '10 더해요', help_K: '바로 99로',
    kidTip: '어린이 방 추천: 조커 0~99, 손패 5장',
    close: '닫기',
    results: '결과', rank: '{n}위', livesLost: '잃은 목숨 {n}', survived: '생존',
    outRound: '{n}라운드 탈락', watchReplay: '다시 보기', backToLobby: '로비로',
    replay: '다시 보기', replayStep: '{i} / {n}', prev: '이전', next: '다음', autoplay: '재생', pause: '멈춤',
    ev_gameStarted: '게임 시작 ({n}명)', ev_roundStarted: '{round}라운드 시작 · 합계 {total}',
    ev_turnStarted: '{name} 님 차례', ev_cardPlayed: '{name}: {face}{choice} → {total}',
    ev_directionChanged: '방향이 바뀌었어요', ev_cardDrawn: '{name} 님이 1장 가져왔어요',
    ev_reshuffled: '버린 카드를 섞었어요', ev_lifeLost: '{name} 님 목숨 -1 (남은 {left})',
    ev_tokensPaid: '{name} 님 토큰 -{n} (남은 {left})', ev_turnSkipped: '{name} 님 차례 건너뜀', ev_playAgain: '{name} 님 한 번 더',
    ev_eliminated: '{name} 님 탈락', ev_gameFinished: '게임 끝!', ev_handDealt: '{name} 님이 카드를 받았어요',
    choice_keep: ' (방향 그대로)', choice_reverse: ' (방향 바꾸기)',
    conn_connecting: '연결 중…', conn_open: '연결됨', conn_reconnecting: '연결 끊김 · 다시 연결 중…', conn_closed: '연결 끊김',
    needName: '이름을 적어 주세요', needCode: '방 코드를 적어 주세요', notYourTurn: '지금은 내 차례가 아니에요',
    demo: '데모: {what}', copied: '코드를 복사했어요', lang: 'English',
    sessionLost: '자리 정보가 만료됐어요. 로비로 돌아가요', you: '나',
    offlineBanner: '연결 끊김 — 다시 연결하는 중이에요…',
    bn_timeout: '⏰ {name} 님 시간 초과 — 자동으로 {face} → {total}',
    bn_reversed: '🔄 {name} 님이 방향을 바꿨어요 ({dir})',
    bn_reshuffled: '🔀 버린 카드 {n}장을 섞어 더미를 만들었어요',
    bn_lifeLost: '💔 {name} 님 목숨 1개 잃음 (남은 목숨 {left})',
    bn_eliminated: '❌ {name} 님 탈락! ({n}명 남음)',
    bn_newRound: '🔔 {round}라운드 — {name} 님부터, 합계 {total}',
    bn_gameStart: '🎲 게임 시작 — {name} 님부터, 합계 {total}',
    bn_threeSeconds: '⚡ {name} 님 3턴 연속 시간 초과 — 이제 {s}초만 있어요',
    leaveWarn: '나가면 돌아올 수 없어요. 내 자리는 자동으로 플레이돼요.', leaveYes: '나가기', cancel: '취소',
    secondsLeft: '{n}초 남음', rematch: '한 판 더', rematchNote: '같은 설정으로 새 방을 만들었어요. 다른 사람도 "한 판 더"를 누르면 이 방에 들어와요',
    helpJoker: '{min}~{max} 중 원하는 숫자로 만들어요',
    soundOn: '소리 켜짐 (누르면 끄기)', soundOff: '소리 꺼짐 (누르면 켜기)',
    backToResults: '결과로',
    verifyDeal: '공정성 확인', fairTitle: '카드 분배 확인 (브라우저에서 다시 계산)',
    fairOk: '✅ 시작 때 공개한 약속 그대로 섞고 나눴어요', fairBad: '❌ 공개된 약속과 맞지 않아요!',
    fair_commitment: 'SHA-256(공개된 시드) = 시작 때 공개한 값', fair_deckSize: '덱 {n}장',
    fair_starter: '첫 차례: {name}', fair_hand: '{name} 님의 첫 손패 {n}장', fairSeed: '시드 {seed}',
  },
  en: {
    title: "Don't pass 99!",
    tagline: 'Take turns adding cards to the total. Never go over 99!',
    yourName: 'Your name',
    namePlaceholder: 'Name (up to 24)',
    createTitle: 'Create a room',
    preset: 'Variant', presetNone: 'None (the rules below)', houseRules: 'House rules',
    houseRulesHint: 'e.g. card.8=reverse, tokens=5',
    bn_skipped: "⏭️ {by} skipped {name}'s turn",
    bn_playAgain: '🔁 {name} plays again',
    bn_roundScored: '★ Round {round} points added',
    bn_startCard: '🂠 Start card {face}: the total starts at {total}',
    bn_specialWin: '👑 {name} wins at once with {n} × {rank}',
    bn_specialAll: "💥 {name}'s {n} × {rank}: everyone loses",
    bn_tokensPaid: '🪙 {name} paid {n} token(s) ({at}, {left} left)',
    bn_tokensPaidSelf: '🪙 {name} went past {at} and paid {n} token(s) ({left} left)',
    mode: 'Rules', modeKr: 'Ninety-nine (kr-product)', modeClassic: 'Playing cards (classic)',
    seats: 'Players', lives: 'Lives', handSize: 'Hand size', turnSeconds: 'Turn time',
    jokerRange: 'Joker range', startTotal: 'Start total', floorAtZero: 'Below-zero subtraction',
    afterElimination: 'After an elimination', onTheBoard: 'One more loss at 0 lives', refill: 'Draw after playing',
    auto: 'Auto', livesNone: 'None (out at once)', seconds: '{n} s', cards: '{n} cards', people: '{n} players',
    startAuto: 'Start card (2p 40, 3p 20)', startZero: 'Always 0',
    forbid: 'Not allowed', clamp: 'Clamp to 0', continue: 'Keep the total', reset: 'Back to start',
    on: 'On', off: 'Off', advanced: 'More settings',
    kidPreset: 'Kids room (joker 0–99, 5 cards)', kidApplied: 'Kids room settings chosen',
    create: 'Create room',
    joinTitle: 'Join with a code', roomCode: 'Room code', join: 'Join', spectate: 'Watch',
    openRooms: 'Open rooms', refresh: 'Refresh', noRooms: 'No open rooms',
    waiting: 'Waiting', playing: 'Playing', finished: 'Finished',
    waitingRoom: 'Waiting room', shareCode: 'Share this code with a friend',
    addBot: 'Add bot', start: 'Start game', leave: 'Leave', host: 'Host', bot: 'Bot', empty: 'Empty seat',
    spectators: '{n} watching', waitHost: 'Waiting for the host to start',
    myTurn: 'Your turn!', turnOf: "{name}'s turn", spectating: 'Watching',
    handCount: '{n}', disconnected: 'Offline', eliminatedTag: 'Out',
    play: 'Play → {n}', playHint: 'Tap again to play',
    plusBtn: '+{v} → {n}', minusBtn: '−{v} → {n}',
    keepBtn: 'Keep direction → {n}', reverseBtn: 'Reverse → {n}',
    aceBtn: 'A = {v} → {n}',
    jokerTitle: 'Set the total to', playJoker: 'Play joker → {n}',
    badge_OVER_99: 'Over 99', badge_BELOW_ZERO: 'Below 0', badge_other: "Can't play",
    recent: 'Recent', drawPile: '{n} in pile', round: 'Round {n}',
    dirCw: 'Clockwise', dirCcw: 'Counter-clockwise',
    help: 'Help', helpRule: "Don't go over 99!",
    helpBody: 'Each turn play one card and say the new total. With no playable card you are out (or lose a life). Last one standing wins.',
    helpCard: 'Card', helpEffect: 'Effect',
    help_num: 'Adds its number', help_pm9: 'Adds or subtracts 9', help_pm10: 'Adds or subtracts 10',
    help_zero: 'No change; keep or reverse the direction', help_joker: 'Sets the total to any number 60–99',
    helpHouseRules: 'House rules: {rules}', help_classicTitle: 'Classic 99', help_A: '1 or 11', help_4: '0, reverses direction', help_9: '0, pass',
    help_10: 'Subtracts 10', help_JQ: 'Adds 10', help_K: 'Makes it 99',
    kidTip: 'Kids room: joker 0–99, 5 cards',
    close: 'Close',
    results: 'Results', rank: '#{n}', livesLost: 'Lives lost {n}', survived: 'Survived',
    outRound: 'Out in round {n}', watchReplay: 'Replay', backToLobby: 'Lobby',
    replay: 'Replay', replayStep: '{i} / {n}', prev: 'Back', next: 'Next', autoplay: 'Play', pause: 'Pause',
    ev_gameStarted: 'Game started ({n} players)', ev_roundStarted: 'Round {round} · total {total}',
    ev_turnStarted: "{name}'s turn", ev_cardPlayed: '{name}: {face}{choice} → {total}',
    ev_directionChanged: 'Direction reversed', ev_cardDrawn: '{name} drew a card',
    ev_reshuffled: 'Discards reshuffled', ev_lifeLost: '{name} lost a life ({left} left)',
    ev_tokensPaid: '{name} paid {n} ({left} left)', ev_turnSkipped: '{name} is skipped', ev_playAgain: '{name} plays again',
    ev_eliminated: '{name} is out', ev_gameFinished: 'Game over!', ev_handDealt: '{name} got cards',
    choice_keep: ' (keep)', choice_reverse: ' (reverse)',
    conn_connecting: 'Connecting…', conn_open: 'Online', conn_reconnecting: 'Offline · reconnecting…', conn_closed: 'Offline',
    needName: 'Enter your name', needCode: 'Enter a room code', notYourTurn: 'It is not your turn',
    demo: 'Demo: {what}', copied: 'Code copied', lang: '한국어',
    sessionLost: 'Your seat expired; back to the lobby', you: 'you',
    offlineBanner: 'Connection lost — reconnecting…',
    bn_timeout: '⏰ {name} ran out of time — auto-played {face} → {total}',
    bn_reversed: '🔄 {name} reversed the direction ({dir})',
    bn_reshuffled: '🔀 {n} discards reshuffled into the draw pile',
    bn_lifeLost: '💔 {name} lost a life ({left} left)',
    bn_eliminated: '❌ {name} is out! ({n} left)',
    bn_newRound: '🔔 Round {round} — {name} starts at {total}',
    bn_gameStart: '🎲 Game on — {name} starts at {total}',
    bn_threeSeconds: '⚡ {name} timed out 3 turns in a row — only {s} s now',
    leaveWarn: 'Leaving is final; your seat plays on by itself.', leaveYes: 'Leave', cancel: 'Cancel',
    secondsLeft: '{n} seconds left', rematch: 'Play again', rematchNote: 'New room with the same settings: the others join it with "Play again"',
    helpJoker: 'Sets the total to any number {min}–{max}',
    soundOn: 'Sound on (tap to mute)', soundOff: 'Sound off (tap to unmute)',
    backToResults: 'Results',
    verifyDeal: 'Verify the deal', fairTitle: 'Deal check (recomputed in your browser)',
    fairOk: '✅ Shuffled and dealt exactly as committed at the start', fairBad: '❌ Does not match the commitment!',
    fair_commitment: 'SHA-256(revealed seed) = commitment published at the start', fair_deckSize: '{n}-card deck',
    fair_starter: 'First turn: {name}', fair_hand: "{name}'s first hand of {n}", fairSeed: 'Seed {seed}',
  },
};

let current = 'ko';

export function initLang() {
  const saved = localStorage.getItem('nn.lang');
  const asked = new URLSearchParams(location.search).get('lang');
  current = asked === 'en' || asked === 'ko' ? asked : saved === 'en' ? 'en' : 'ko';
  document.documentElement.lang = current;
  return current;
}

export function lang() {
  return current;
}

export function setLang(next) {
  current = next === 'en' ? 'en' : 'ko';
  localStorage.setItem('nn.lang', current);
  document.documentElement.lang = current;
}

/** Translate `key`, filling {placeholders} from `params`. Unknown keys show themselves (easy to spot). */
export function t(key, params = {}) {
  const text = TEXTS[current][key] ?? TEXTS.ko[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in params ? String(params[name]) : `{${name}}`));
}

/** Short badge for an unplayable card from the server's refusal code. */
export function badgeFor(reason) {
  const key = `badge_${reason}`;
  return key in TEXTS.ko ? t(key) : t('badge_other');
}

/** Fill every [data-i18n] element (static markup) with the current language. */
export function translateStatic(root = document) {
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll('[data-i18n-placeholder]')) el.placeholder = t(el.dataset.i18nPlaceholder);
}
