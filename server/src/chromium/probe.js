// Installed in every document of an environment page (before the page's own scripts run) and
// re-run, idempotently, on tabs we attach to late. It only observes: it counts in-flight fetch/XHR
// requests and short timers, notes the last DOM mutation, and stops clicks on links with forbidden
// schemes. `settle` resolves once the page is quiet and two frames have been painted.
(() => {
  if (window.__browserenv) return;
  const nativeSetTimeout = window.setTimeout.bind(window);
  const nativeClearTimeout = window.clearTimeout.bind(window);
  const state = {
    requests: 0,
    timers: new Set(),
    lastMutation: performance.now(),
    blocked: [],
  };
  // Timers longer than this are polling or idle work, not an effect of the action.
  const SHORT_TIMER_MS = 1000;
  const FORBIDDEN = /^\s*(javascript|file|data|chrome|chrome-untrusted|devtools|view-source|filesystem)\s*:/i;

  window.setTimeout = function (handler, delay, ...args) {
    const ms = Number(delay) || 0;
    if (typeof handler !== 'function' || ms > SHORT_TIMER_MS) {
      return nativeSetTimeout(handler, delay, ...args);
    }
    const id = nativeSetTimeout(function () {
      state.timers.delete(id);
      return handler.apply(this, args);
    }, ms);
    state.timers.add(id);
    return id;
  };
  window.clearTimeout = function (id) {
    state.timers.delete(id);
    return nativeClearTimeout(id);
  };

  if (window.fetch) {
    const nativeFetch = window.fetch;
    window.fetch = function (...args) {
      state.requests++;
      let settled = false;
      const done = () => {
        if (!settled) {
          settled = true;
          state.requests--;
        }
      };
      try {
        const promise = nativeFetch.apply(this, args);
        promise.then(done, done);
        return promise;
      } catch (error) {
        done();
        throw error;
      }
    };
  }
  const nativeSend = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    state.requests++;
    this.addEventListener('loadend', () => state.requests--, { once: true });
    return nativeSend.apply(this, args);
  };

  new MutationObserver(() => {
    state.lastMutation = performance.now();
  }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });

  const stopForbidden = (event) => {
    const link = event.target && event.target.closest ? event.target.closest('a[href]') : null;
    if (link && FORBIDDEN.test(link.getAttribute('href'))) {
      event.preventDefault();
      state.blocked.push(link.getAttribute('href').slice(0, 200));
    }
  };
  window.addEventListener('click', stopForbidden, true);
  window.addEventListener('auxclick', stopForbidden, true);

  const twoFrames = () =>
    new Promise((resolve) => {
      // rAF does not run in a hidden page; never wait on it for long.
      const fallback = nativeSetTimeout(resolve, 100);
      requestAnimationFrame(() =>
        requestAnimationFrame(() => {
          nativeClearTimeout(fallback);
          resolve();
        }),
      );
    });

  const api = {
    settle(quietMs, minMs, maxMs) {
      const start = performance.now();
      return new Promise((resolve) => {
        const check = () => {
          const now = performance.now();
          const busy =
            state.requests > 0 || state.timers.size > 0 || document.readyState !== 'complete';
          const quiet = !busy && now - state.lastMutation >= quietMs && now - start >= minMs;
          const bounded = now - start >= maxMs;
          if (quiet || bounded) {
            twoFrames().then(() => resolve({ bounded: !quiet }));
          } else {
            nativeSetTimeout(check, 10);
          }
        };
        check();
      });
    },
    facts(maxText) {
      const blocked = state.blocked.splice(0);
      const body = document.body;
      // Where password inputs are on screen, so recordings can mask them (--redact).
      const passwords = Array.from(document.querySelectorAll('input[type=password]'))
        .map((input) => input.getBoundingClientRect())
        .filter((r) => r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth)
        .map((r) => [Math.floor(r.left), Math.floor(r.top), Math.ceil(r.width), Math.ceil(r.height)]);
      return {
        title: document.title,
        text: body ? body.innerText.slice(0, maxText) : '',
        blocked,
        passwords,
      };
    },
    // The element an action is about: under the pointer for a click, else the focused one.
    element(x, y) {
      let element = x === null ? document.activeElement : document.elementFromPoint(x, y);
      if (!element || element === document.documentElement) return null;
      const tag = element.tagName.toLowerCase();
      const type = (element.getAttribute('type') || '').toLowerCase();
      const implicitRoles = {
        a: element.hasAttribute('href') ? 'link' : '', button: 'button', select: 'combobox',
        textarea: 'textbox', img: 'img', h1: 'heading', h2: 'heading', h3: 'heading',
        h4: 'heading', h5: 'heading', h6: 'heading', canvas: '', label: '', li: 'listitem',
      };
      const inputRoles = { checkbox: 'checkbox', radio: 'radio', button: 'button', submit: 'button',
        reset: 'button', range: 'slider', search: 'searchbox' };
      const role = element.getAttribute('role')
        || (tag === 'input' ? inputRoles[type] || 'textbox' : implicitRoles[tag] || '');
      const clean = (text) => (text || '').replace(/\s+/g, ' ').trim();
      const labelled = element.getAttribute('aria-labelledby');
      const byId = labelled ? labelled.split(/\s+/).map((id) => document.getElementById(id))
        .filter(Boolean).map((e) => e.textContent).join(' ') : '';
      const labels = element.labels ? Array.from(element.labels).map((l) => l.textContent).join(' ') : '';
      const name = clean(element.getAttribute('aria-label') || byId || labels || element.getAttribute('alt')
        || element.getAttribute('title') || element.getAttribute('placeholder')
        || (tag === 'input' ? '' : element.innerText)).slice(0, 200);
      const password = tag === 'input' && type === 'password';
      const text = password ? '' : clean(element.innerText || element.value || '').slice(0, 200);
      const r = element.getBoundingClientRect();
      return { tag, role, name, text, type: type || null, password,
        bbox: [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)] };
    },
  };
  Object.defineProperty(window, '__browserenv', { value: api, enumerable: false });
})();
