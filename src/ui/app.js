// ghola ui: the search answers as you type. Every page works without this script (the form submits); with
// it, the results under the form are replaced as the words change, and the address follows the search.
(() => {
  const form = document.querySelector("form.search");
  const results = document.getElementById("results");
  if (!form || !results) return;
  let timer = null;
  let asked = 0;
  const run = async () => {
    const params = new URLSearchParams(new FormData(form));
    if (!(params.get("q") || "").trim()) return;
    const mine = ++asked;
    const address = "/search?" + params.toString();
    params.set("part", "results");
    try {
      const r = await fetch("/search?" + params.toString(), { credentials: "same-origin" });
      const html = await r.text();
      if (mine !== asked) return; // a later search is under way
      results.innerHTML = html;
      history.replaceState(null, "", address);
    } catch (e) {
      // The server went away: the form still submits.
    }
  };
  form.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(run, 180);
  });
  form.addEventListener("change", () => {
    clearTimeout(timer);
    run();
  });
})();
