// The console's one script, progressive enhancement only: it reveals the copy buttons next to
// shortened party ids and copies the full id on click. Without it the page works the same,
// the full id on hover and on the party's page.
document.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll("button.copy[data-copy]")) {
    if (!navigator.clipboard) continue;
    b.hidden = false;
    b.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(b.dataset.copy);
        b.textContent = "copied";
      } catch {
        b.textContent = "select it on the party page";
      }
      setTimeout(() => { b.textContent = "copy"; }, 1500);
    });
  }
});
