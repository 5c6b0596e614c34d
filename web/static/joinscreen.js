// joinscreen.js: the projector's join screen keeps its count of learners
// joined current, so the room sees itself arrive.
const count = document.getElementById("join-count");
if (count) {
  setInterval(async () => {
    try {
      const res = await fetch(count.dataset.refresh, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!res.ok) return;
      const { joined } = await res.json();
      const text = joined === 1 ? "1 learner joined" : `${joined} learners joined`;
      if (count.textContent !== text) count.textContent = text;
    } catch { /* the next tick tries again */ }
  }, 3000);
}
