// starting.js keeps the "getting ready" page current while oplab's cluster
// is built and started: every 2 s it asks /starting where things stand and
// rewrites the sentence, the progress bar and the list of binaries built.
// When the cluster is up (the real server answers "ready"), it loads the
// page again, which is then the real one.
(() => {
  const status = document.getElementById("starting-status");
  if (!status) return;
  // said is the step the sentence says: the server's, as the page came.
  const said = { phase: status.dataset.phase, building: status.dataset.building || "" };
  const units = (ms) => {
    const s = Math.round(ms / 1000);
    return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
  };
  // sentence mirrors starting.Status.Sentence: the page comes with the
  // server's words, these follow the steps after it.
  function sentence(st) {
    switch (st.phase) {
      case "building":
        return `Building the Kubernetes control plane from source: ${st.building}, step ${st.built + 1} of ${st.total} (${st.total - st.built - 1} more after it).`;
      case "starting":
        return "Starting the cluster: etcd, the API server, the controller manager, the scheduler and a fake node.";
      case "connecting":
        return "Connecting to the Kubernetes API server and starting the controller.";
      case "failed":
        return `The cluster could not be made: ${st.error}`;
    }
    return "The cluster is up.";
  }
  function draw(st) {
    // Rewritten only when the step changes, so a screen reader hears each
    // step once, not every poll.
    if (st.phase !== said.phase || (st.building || "") !== said.building) {
      status.textContent = sentence(st);
      said.phase = st.phase;
      said.building = st.building || "";
    }
    const elapsed = document.getElementById("starting-elapsed");
    if (elapsed) {
      if (st.phase === "failed") elapsed.remove();
      else {
        elapsed.textContent = `${units(Date.now() - Date.parse(st.began))} so far`;
      }
    }
    const bar = document.getElementById("starting-progress");
    if (bar) {
      bar.max = st.total;
      bar.value = st.built;
      bar.textContent = `${st.built} of ${st.total}`;
    }
    const done = document.getElementById("starting-done");
    if (done && done.children.length !== (st.done || []).length) {
      done.replaceChildren(...(st.done || []).map((b) => {
        const li = document.createElement("li");
        li.textContent = `${b.name} built in ${units(b.took / 1e6)}`;
        return li;
      }));
    }
  }
  async function tick() {
    try {
      const res = await fetch("/starting", { cache: "no-store", credentials: "same-origin" });
      if (res.ok) {
        const st = await res.json();
        if (st.phase === "ready") {
          location.reload();
          return;
        }
        draw(st);
        if (st.phase === "failed") return;
      }
    } catch (_) {
      // oplab restarting or the network down: try again on the next tick.
    }
    setTimeout(tick, 2000);
  }
  setTimeout(tick, 2000);
})();
