// Read one UI message stream with the real `ai` package: parseJsonEventStream validates
// each chunk against uiMessageChunkSchema, readUIMessageStream assembles the message.
// Prints {header, chunks, message} as one JSON line. Usage: node aisdk_reader.mjs URL TEXT
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";

const [url, text] = process.argv.slice(2);
const response = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({
    id: "chat_1",
    messages: [{ id: "u1", role: "user", parts: [{ type: "text", text }] }],
  }),
});
const chunks = [];
const invalid = [];
const parts = parseJsonEventStream({ stream: response.body, schema: uiMessageChunkSchema });
const stream = parts.pipeThrough(new TransformStream({
  transform(part, controller) {
    if (!part.success) { invalid.push(String(part.error)); return; }
    chunks.push(part.value);
    controller.enqueue(part.value);
  },
}));
let message = null;
const errors = [];
for await (const m of readUIMessageStream({ stream, onError: (e) => errors.push(String(e)) })) {
  message = m;
}
console.log(JSON.stringify({
  status: response.status,
  header: response.headers.get("x-vercel-ai-ui-message-stream"),
  chunks, invalid, errors, message,
}));
