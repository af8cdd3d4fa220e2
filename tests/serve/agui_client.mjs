// Consume one AG-UI run with the real @ag-ui/client (HttpAgent) and print what it parsed
// as one JSON line: the events, the run's result, the messages and the state it built.
// Usage: node agui_client.mjs URL QUESTION  (run from a folder whose node_modules has it)
import { HttpAgent } from "@ag-ui/client";

const [url, question] = process.argv.slice(2);
const agent = new HttpAgent({
  url,
  threadId: "thread_node",
  initialMessages: [{ id: "u1", role: "user", content: question }],
});
const events = [];
try {
  const result = await agent.runAgent(
    { runId: "node_run" },
    { onEvent: ({ event }) => { events.push(event); } },
  );
  console.log(JSON.stringify({
    ok: true, events, result: result.result, messages: agent.messages, state: agent.state,
  }));
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: String(error), events }));
}
