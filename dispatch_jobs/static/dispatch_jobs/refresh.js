// Auto-refresh for the console's live pages: off by default, remembered per
// page in localStorage. Pages with [data-dj-live] regions get those regions
// swapped in place from a fresh copy of the page; others (the job list) are
// reloaded. Nothing refreshes while the operator is typing, has a field
// focused or has ticked rows, so a refresh never takes work out of their hands.
(function () {
  "use strict";
  const box = document.getElementById("dj-refresh-toggle");
  if (!box) {
    return;
  }
  const key = "dispatch_jobs.refresh." + (box.dataset.page || location.pathname);
  const seconds = Math.max(2, parseInt(box.dataset.seconds, 10) || 5);
  let timer = null;

  function busy() {
    const active = document.activeElement;
    const typing = active && active !== box && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName);
    return typing || document.querySelector("input.action-select:checked") !== null;
  }

  async function refresh() {
    if (busy()) {
      return;
    }
    const live = document.querySelectorAll("[data-dj-live]");
    if (live.length === 0) {
      location.reload();
      return;
    }
    let response;
    try {
      response = await fetch(location.href, { credentials: "same-origin" });
    } catch (error) {
      return; // offline for a moment: the next tick tries again
    }
    if (!response.ok) {
      return;
    }
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    live.forEach(function (region) {
      const replacement = fresh.getElementById(region.id);
      if (replacement) {
        region.replaceWith(document.importNode(replacement, true));
      }
    });
    document.dispatchEvent(new CustomEvent("dj:refreshed"));
  }

  function schedule() {
    clearInterval(timer);
    timer = box.checked ? setInterval(refresh, seconds * 1000) : null;
  }

  box.checked = localStorage.getItem(key) === "on";
  box.addEventListener("change", function () {
    localStorage.setItem(key, box.checked ? "on" : "off");
    schedule();
  });
  schedule();
})();
