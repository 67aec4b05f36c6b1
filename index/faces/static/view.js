// Placeholders in the Replay tab: clicking one fetches the original through
// conversation_read (40,000 chars a page) and shows it in place. Text goes in through
// textContent only.
async function readPage(params, offset) {
  params.set("offset", String(offset));
  const response = await fetch("/api/conversation_read?" + params, {credentials: "same-origin"});
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

async function reveal(button) {
  button.disabled = true;
  const params = new URLSearchParams({
    conversation_id: button.dataset.cid, message_id: button.dataset.mid });
  if (button.dataset.call) params.set("tool_call_id", button.dataset.call);
  const box = document.createElement("div");
  box.className = "revealed";
  const label = document.createElement("div");
  label.className = "label";
  const pre = document.createElement("pre");
  pre.className = "text original";
  box.append(label, pre);
  button.replaceWith(box);
  let offset = 0;
  async function more() {
    try {
      const data = await readPage(params, offset);
      pre.textContent += data.content;
      offset = data.offset + data.content.length;
      label.textContent = "original, from conversation_read(message_id=" +
        JSON.stringify(button.dataset.mid) + "): " + offset.toLocaleString("en-US") + " of " +
        data.total_chars.toLocaleString("en-US") + " chars";
      if (data.next) {
        const next = document.createElement("button");
        next.type = "button";
        next.className = "more";
        next.textContent = "load the next page";
        next.addEventListener("click", () => { next.remove(); more(); });
        box.append(next);
      }
    } catch (error) {
      label.textContent = "could not fetch the original: " + error.message;
    }
  }
  await more();
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button.placeholder");
  if (button) reveal(button);
});

// The conversation list fills in replay sizes it has not computed yet, four rows at a time.
async function fill(row) {
  const cell = row.querySelector("td[data-lazy]");
  const params = new URLSearchParams({id: cell.dataset.lazy});
  try {
    const response = await fetch("/api/replay_stats?" + params, {credentials: "same-origin"});
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || response.statusText);
    row.querySelector("td.replay").textContent = data.replay.toLocaleString("en-US");
    row.querySelector("td.placeholders").textContent = String(data.placeholders);
  } catch (error) {
    cell.textContent = "?";
    cell.title = error.message;
  }
  for (const done of row.querySelectorAll("td[data-lazy]")) done.removeAttribute("data-lazy");
}

(async () => {
  const rows = [...document.querySelectorAll("tr:has(td[data-lazy])")];
  const workers = [0, 1, 2, 3].map(async () => {
    while (rows.length) await fill(rows.shift());
  });
  await Promise.all(workers);
})();
