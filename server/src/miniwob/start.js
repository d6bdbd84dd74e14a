// Starts a MiniWoB++ episode on a task page that has loaded (server/src/miniwob/), in the
// page's own world, and answers `{instruction}` or `{error}`. The page stays the task as MiniWoB++
// draws it, with the instruction on top, without what is there for a person watching a human
// demonstration: the START cover (an agent starts at reset), the reward display beside the task
// and the click marks. MiniWoB++'s episode timer does not end the episode (the server's step
// limit does), but the time it would have used still discounts the page's reward
// (`WOB_REWARD_GLOBAL`, on the page's clock), as MiniWoB++ computes it.
(async (seed, waitMs, pictured) => {
  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
  const until = async (ready) => {
    for (let waited = 0; !ready(); waited += 20) {
      if (waited >= waitMs) return false;
      await sleep(20);
    }
    return true;
  };
  if (typeof core !== 'object' || typeof core.startEpisodeReal !== 'function'
      || typeof Math.seedrandom !== 'function') {
    return { error: 'not a MiniWoB++ task page (no core.startEpisodeReal)' };
  }
  // The page's `window.onload` shows the cover (core.startEpisode) and makes the display the
  // episode's start writes to.
  if (!await until(() => core.cover_div)) {
    return { error: 'the task page did not show its START cover' };
  }
  const hidden = document.createElement('style');
  hidden.textContent = '#sync-task-cover, #reward-display, #click-canvas { display: none !important; }';
  document.head.appendChild(hidden);
  // An episode that ends shows the cover for the next one: here the page stays as it ended.
  core.startEpisode = () => {};
  Math.seedrandom(seed);
  core.startEpisodeReal();
  // The countdown shown beside the task ticks every second (and would keep the settle waiting);
  // the timer that ends the episode goes, and `endEpisode` still takes the page's verdict once
  // (it needs a timer id that is not null).
  core.clearTimer();
  clearTimeout(core.EP_TIMER);
  core.EP_TIMER = 0;
  // Some tasks build themselves after the start (a flight search in a frame).
  if (!await until(() => WOB_TASK_READY)) {
    return { error: 'the task did not say it was ready (WOB_TASK_READY)' };
  }
  let said = core.getUtterance();
  if (said && typeof said === 'object') said = said.utterance;
  const query = document.getElementById('query');
  // An instruction that shows part of what it asks as a picture (click-menu-2's icon,
  // use-colorwheel-2's colour: `pictured`) says it in words: the icon's class, the colour's hex
  // code (MiniWoB++'s own reading keeps only the words around them).
  if (pictured && query) {
    const hex = (rgb) => '#' + (rgb.match(/\d+/g) || []).slice(0, 3)
      .map((n) => Number(n).toString(16).padStart(2, '0')).join('');
    const parts = [];
    for (const node of query.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) {
        parts.push(node.textContent);
      } else if (node.classList && node.classList.contains('ui-icon')) {
        const icon = [...node.classList].find((name) => name.startsWith('ui-icon-'));
        parts.push(` "${icon || ''}" `);
      } else if (node.style && node.style.backgroundColor && !node.textContent.trim()) {
        parts.push(` ${hex(node.style.backgroundColor)} `);
      } else {
        parts.push(node.textContent);
      }
    }
    said = parts.join('');
  }
  return { instruction: String(said || '').replace(/\s+/g, ' ').trim() };
})
