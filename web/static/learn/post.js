// post.js: how the course pages ask the server.

// postJSON sends body to the server and returns its JSON reply, throwing
// the server's own error message when it refuses.
export async function postJSON(url, body) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const reply = await res.json();
  if (!res.ok) throw new Error(reply.error || `HTTP ${res.status}`);
  return reply;
}
