import type { Agent } from '../../src/agents/agent.js';
import { listMcpServersOf } from '../../src/agents/queries.js';
import { createToolbox } from '../../src/agents/toolbox.js';
import { createLogger } from '../../src/logger.js';
import { createAgentRuntime, defaultRuntimeOptions } from '../../src/runtime/queue.js';
import { findScribesByIds } from '../../src/scribes/queries.js';
import type { Harness } from './harness.js';

/** An agent runtime of its own over the harness's database, working every scribe with `agent` (one made with a test's settings, such as a short deadline). */
export function runtimeWith(h: Harness, agent: Agent) {
  return createAgentRuntime({
    db: h.db,
    clock: h.services.clock,
    logger: createLogger('silent'),
    agentFor: () => agent,
    findScribes: (ids) => findScribesByIds(h.db, ids),
    toolboxFor: (scribe) => createToolbox(scribe, h.services),
    mcpServersOf: (scribeIds) => listMcpServersOf(h.db, h.services.secrets, scribeIds),
    options: defaultRuntimeOptions,
  });
}
