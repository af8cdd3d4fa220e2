// Consume one AG-UI run with the real @ag-ui/client (HttpAgent) and print what it parsed
// as one JSON line: the events, the run's result, the messages and the state it built.
// With DECISION ("approve" or "deny"), a run that ends with interrupts is resumed once:
// the same agent runs again with `resume` answering each of its pendingInterrupts.
// Usage: node agui_client.mjs URL QUESTION [DECISION]  (from a folder whose node_modules has it)
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const [url, question, decision] = process.argv.slice(2);
const agent = new HttpAgent({
  url,
  threadId: "thread_node",
  initialMessages: [{ id: "u1", role: "user", content: question }],
});
const events = [];
const resumed = [];
try {
  const result = await agent.runAgent(
    { runId: "node_run" },
    { onEvent: ({ event }) => { events.push(event); } },
  );
  const interrupts = agent.pendingInterrupts.map((i) => ({ ...i }));
  let after = null;
  if (decision && interrupts.length) {
    const payload = decision === "approve" ? { approved: true } : { approved: false, reason: "too large" };
    const answers = Object.fromEntries(interrupts.map((i) => [i.id, { status: "resolved", payload }]));
    after = await agent.runAgent(
      { runId: "node_run_2", resume: buildResumeArray(interrupts, answers) },
      { onEvent: ({ event }) => { resumed.push(event); } },
    );
  }
  console.log(JSON.stringify({
    ok: true, events, result: result.result, interrupts, resumed,
    resumedResult: after ? after.result : null, pendingAfter: agent.pendingInterrupts,
    messages: agent.messages, state: agent.state,
  }));
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: String(error), events, resumed }));
}
