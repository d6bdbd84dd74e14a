// The page's clock in a replayed episode (server/src/archive/replay.rs), installed in every new
// document of its tabs before the page's own scripts, after the probe (which keeps the browser's
// own clock and timers for the settle). A replayed site sees the time it was recorded at:
//
// - without a seed, `Date` starts at the recorded time when the episode starts and runs with the
//   real clock; `performance.now` and `Math.random` are the browser's.
// - with a seed, the clock is the page's own: it starts at the recorded time in every document and
//   moves only with what the page does (a little at each reading, to a timer's due time when it
//   fires, a frame's length at each animation frame), never with the machine's speed; `Math.random`
//   is a generator seeded by the seed and the page's address, and the text caret is not drawn. The
//   same actions on the same archive then give the same pixels.
(() => {
  if (window.__browserenvClock) return;
  Object.defineProperty(window, '__browserenvClock', { value: true });
  const START = __START__;
  const OFFSET = __OFFSET__;
  const SEED = __SEED__;
  const NativeDate = Date;
  const nativeDateNow = NativeDate.now;
  // The page's time, in milliseconds since the epoch.
  let clock;
  if (SEED === null) {
    clock = () => nativeDateNow() + OFFSET;
  } else {
    // Milliseconds since the document started, on the page's clock.
    let elapsed = 0;
    // Each reading moves it by this much: a loop that waits for the clock to pass a time ends.
    const READING = 0.05;
    const FRAME = 1000 / 60;
    const read = () => (elapsed += READING);
    clock = () => START + read();
    performance.now = function now() {
      return read();
    };
    const nativeSetTimeout = window.setTimeout;
    const nativeSetInterval = window.setInterval;
    const nativeRequestAnimationFrame = window.requestAnimationFrame;
    window.setTimeout = function setTimeout(handler, delay, ...args) {
      if (typeof handler !== 'function') return nativeSetTimeout.call(window, handler, delay, ...args);
      const due = elapsed + Math.max(0, Number(delay) || 0);
      return nativeSetTimeout.call(window, function () {
        if (elapsed < due) elapsed = due;
        return handler.apply(this, args);
      }, delay);
    };
    window.setInterval = function setInterval(handler, delay, ...args) {
      if (typeof handler !== 'function') return nativeSetInterval.call(window, handler, delay, ...args);
      const period = Math.max(0, Number(delay) || 0);
      let due = elapsed;
      return nativeSetInterval.call(window, function () {
        due += period;
        if (elapsed < due) elapsed = due;
        return handler.apply(this, args);
      }, delay);
    };
    let lastFrame = null;
    let frameAt = 0;
    window.requestAnimationFrame = function requestAnimationFrame(callback) {
      if (typeof callback !== 'function') return nativeRequestAnimationFrame.call(window, callback);
      return nativeRequestAnimationFrame.call(window, (timestamp) => {
        // Callbacks of one frame share its time.
        if (timestamp !== lastFrame) {
          lastFrame = timestamp;
          frameAt = Math.max(elapsed, frameAt + FRAME);
          elapsed = frameAt;
        }
        return callback(frameAt);
      });
    };
    // mulberry32, seeded by the seed and the page's address (FNV-1a).
    let hash = 0x811c9dc5;
    for (const ch of location.origin + location.pathname) {
      hash = Math.imul(hash ^ ch.charCodeAt(0), 0x01000193) >>> 0;
    }
    let state = (SEED ^ hash) >>> 0;
    Math.random = function random() {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  // The text caret blinks on the browser's own clock (every 500 ms), so whether a picture shows it
  // depends on when it is taken: with a seed it is not drawn, or the same actions would not give
  // the same pixels (a typed search box, pictured 0.6 s after its click on a loaded machine).
  if (SEED !== null) {
    try {
      const sheet = new CSSStyleSheet();
      sheet.replaceSync('* { caret-color: transparent !important; }');
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    } catch (_) {
      // A document that takes no style sheets (not HTML) has no caret to hide.
    }
  }
  // Named otherwise: a function declaration named `Date` would be `Date` in this whole scope.
  function PageDate(...args) {
    if (!new.target) return new NativeDate(clock()).toString();
    return Reflect.construct(NativeDate, args.length ? args : [clock()], new.target);
  }
  PageDate.prototype = NativeDate.prototype;
  PageDate.now = function now() {
    return Math.floor(clock());
  };
  PageDate.parse = NativeDate.parse;
  PageDate.UTC = NativeDate.UTC;
  Object.defineProperty(PageDate, 'length', { value: 7 });
  Object.defineProperty(PageDate, 'name', { value: 'Date' });
  Object.defineProperty(NativeDate.prototype, 'constructor', {
    value: PageDate, writable: true, configurable: true,
  });
  window.Date = PageDate;
})();
