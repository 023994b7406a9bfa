import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type ServerNotification,
  type ServerRequest,
  SubscribeRequestSchema,
  type Tool,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import type { Caller } from '../domain/access/principal.js';
import { API_VERSION } from '../log/append.js';
import { AppError, FieldValidationError } from '../errors.js';
import { normalizeOrgId } from '../domain/shared/ids.js';
import { hostileInputError } from '../edge/field-issues.js';
import { argumentIssues, toolFailure, toolSuccess } from './results.js';
import { TOOLS, type ToolDefinition } from './tools.js';
import { declarePrompt, DECLARE_PROMPT } from './prompts.js';
import {
  checkReadable,
  completeCategoryName,
  completeTemplateArgument,
  completionOf,
  EMERGENCY_TEMPLATE,
  listEmergencyResources,
  parseEmergencyUri,
  RESOURCE_TEMPLATES,
  readEmergencyResource,
  TIMELINE_TEMPLATE,
} from './resources.js';
import type { ResourceSubscriptions } from './subscriptions.js';

export const SERVER_INFO = { name: 'emergency-api', title: 'Emergency Notification API', version: API_VERSION };

const INSTRUCTIONS =
  'Declare, re-categorize, resolve and read emergencies of organizations this API key covers. Every tool takes orgId. ' +
  'Writes are real: declaring alerts devices and people. A failed call returns isError with JSON text ' +
  '{"status":<HTTP status>,"error":<code>,"message":<what to do>}; status 422 adds "issues" naming each invalid argument.';

/** The caller of one HTTP request, handed to the tool handlers through the transport's auth info. */
export interface McpAuthExtra {
  [key: string]: unknown;
  caller: Caller;
  permissions: ReadonlySet<string>;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

function authOf(extra: Extra): McpAuthExtra {
  const auth = extra.authInfo?.extra as McpAuthExtra | undefined;
  if (!auth?.caller) throw new AppError('unauthenticated', 'A valid API key is required.');
  return auth;
}

/**
 * A pass-through: the tool adapter parses arguments against the real schema, so a violation becomes the 422 tool error with one
 * issue per argument instead of the SDK's plain sentence without status or location.
 */
const PASS_THROUGH_ARGUMENTS = z.looseObject({});

/** For tools/list. MCP wants an object schema at the root, but zod renders a schema with a registered id as a bare `$ref`: inline it. */
function objectJsonSchema(schema: z.ZodType, io: 'input' | 'output'): Tool['inputSchema'] {
  const json = z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
  const ref = typeof json.$ref === 'string' ? /^#\/definitions\/(.+)$/.exec(json.$ref)?.[1] : undefined;
  if (ref) {
    const { [ref]: root, ...rest } = json.definitions as Record<string, Record<string, unknown>>;
    const { $ref: _ref, definitions: _defs, ...top } = json;
    return { ...top, ...root, ...(Object.keys(rest).length ? { definitions: rest } : {}) } as Tool['inputSchema'];
  }
  return json as Tool['inputSchema'];
}

let listing: { tool: ToolDefinition; json: Tool }[] | undefined;

/** Rendered once per process: the SDK would convert every schema again on each tools/list. */
function toolListing() {
  listing ??= TOOLS.map((tool) => ({
    tool,
    json: {
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: objectJsonSchema(tool.input, 'input'),
      outputSchema: objectJsonSchema(tool.output, 'output'),
      annotations: tool.annotations,
    },
  }));
  return listing;
}

/** The tools a key sees: the ones whose permission it holds (a read-only key does not see write tools). */
export function visibleTools(permissions: ReadonlySet<string>): Tool[] {
  return toolListing()
    .filter(({ tool }) => permissions.has(tool.permission))
    .map(({ json }) => json);
}

function parseArguments(tool: ToolDefinition, args: unknown): unknown {
  const hostile = hostileInputError('body', args);
  if (hostile) throw hostile;
  const result = tool.input.safeParse(args ?? {}, { reportInput: true });
  if (!result.success) throw new FieldValidationError(argumentIssues(result.error.issues));
  const data = result.data as { orgId?: unknown };
  // Org ids name the same org in any letter case; normalised once, before the service authorizes.
  if (typeof data.orgId === 'string') data.orgId = normalizeOrgId(data.orgId);
  return data;
}

/**
 * Every tool is registered, so a hidden write tool called by a read-only key still gets REST's 403 from its service;
 * tools/list shows each key only what it may call.
 */
export function createToolServer(ctx: AppContext, log: FastifyBaseLogger, session?: SessionFeatures): McpServer {
  const mcp = new McpServer(SERVER_INFO, {
    capabilities: { tools: {}, resources: { subscribe: true, listChanged: false }, prompts: { listChanged: false }, logging: {}, completions: {} },
    instructions: INSTRUCTIONS,
  });
  for (const tool of TOOLS) {
    mcp.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: PASS_THROUGH_ARGUMENTS,
        outputSchema: tool.output,
        annotations: tool.annotations,
      },
      async (args: Record<string, unknown>, extra: Extra) => {
        const { caller } = authOf(extra);
        try {
          const result = toolSuccess(await tool.run(ctx, caller, parseArguments(tool, args)));
          log.info({ reqId: caller.requestId, tool: tool.name }, 'tool call succeeded');
          return result;
        } catch (err) {
          const { result, payload } = toolFailure(err, log, tool.name, ctx.dbOutage, tool.annotations.readOnlyHint === true);
          log.info({ reqId: caller.requestId, tool: tool.name, status: payload.status, error: payload.error }, 'tool call failed');
          return result;
        }
      },
    );
  }
  // A stateless server has no channel to announce list changes on.
  mcp.server.registerCapabilities({ tools: { listChanged: false } });
  mcp.server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => ({ tools: visibleTools(authOf(extra).permissions) }));
  addResources(ctx, mcp, session);
  addPromptsAndCompletions(ctx, mcp);
  return mcp;
}

/** What a server of a session adds: its subscriptions (and so its stream's notifications). */
export interface SessionFeatures {
  subscriptions: ResourceSubscriptions;
}

/** Resources, their templates and subscriptions (see resources.ts and subscriptions.ts). */
function addResources(ctx: AppContext, mcp: McpServer, session: SessionFeatures | undefined): void {
  mcp.server.setRequestHandler(ListResourcesRequestSchema, (request, extra) => listEmergencyResources(ctx, authOf(extra).caller, request.params?.cursor));
  mcp.server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: RESOURCE_TEMPLATES }));
  mcp.server.setRequestHandler(ReadResourceRequestSchema, (request, extra) => readEmergencyResource(ctx, authOf(extra).caller, request.params.uri));
  mcp.server.setRequestHandler(SubscribeRequestSchema, async (request, extra) => {
    if (!session) {
      throw new McpError(
        ErrorCode.InvalidRequest,
        'Subscriptions need a session: send initialize, then this request with the Mcp-Session-Id it answered, and open GET /mcp with it for the notifications.',
      );
    }
    const { uri } = request.params;
    const target = await checkReadable(ctx, authOf(extra).caller, uri);
    if (!(await session.subscriptions.subscribe(target.orgId, target.emergencyId, uri))) {
      throw new McpError(ErrorCode.InvalidRequest, `A session holds at most ${session.subscriptions.max} subscriptions; unsubscribe from one first.`);
    }
    await mcp.server.sendLoggingMessage({ level: 'info', logger: 'subscriptions', data: `subscribed to ${uri}` }, extra.sessionId);
    return {};
  });
  mcp.server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    const target = parseEmergencyUri(request.params.uri);
    session?.subscriptions.unsubscribe(target.orgId, target.emergencyId, request.params.uri);
    return {};
  });
}

/**
 * The declare prompt, and completions: org ids and open emergencies for the resource templates, org ids and category names for
 * the prompt. A reference this server does not have completes to nothing.
 */
function addPromptsAndCompletions(ctx: AppContext, mcp: McpServer): void {
  mcp.server.setRequestHandler(ListPromptsRequestSchema, (_request, extra) => ({
    prompts: authOf(extra).permissions.has('emergencies:write') ? [DECLARE_PROMPT] : [],
  }));
  mcp.server.setRequestHandler(GetPromptRequestSchema, (request) => declarePrompt(request.params.name, request.params.arguments));
  mcp.server.setRequestHandler(CompleteRequestSchema, async (request, extra) => {
    const { ref, argument, context } = request.params;
    const { caller } = authOf(extra);
    try {
      if (ref.type === 'ref/resource' && (ref.uri === EMERGENCY_TEMPLATE || ref.uri === TIMELINE_TEMPLATE)) {
        return completionOf(await completeTemplateArgument(ctx, caller, argument, context?.arguments));
      }
      if (ref.type === 'ref/prompt' && ref.name === DECLARE_PROMPT.name) {
        if (argument.name === 'categoryName') return completionOf(await completeCategoryName(ctx, caller, argument.value, context?.arguments?.orgId));
        return completionOf(await completeTemplateArgument(ctx, caller, argument, context?.arguments));
      }
    } catch (err) {
      // An org the key does not cover, or a permission it lacks, completes to nothing rather than telling more.
      if (!(err instanceof AppError)) throw err;
    }
    return completionOf([]);
  });
}

/**
 * A stateless transport serves one request and a server holds one transport at a time, so idle servers are reconnected
 * rather than rebuilt per request; they keep no per-client state that matters, never calling the client.
 */
export class ToolServerPool {
  private readonly idle: McpServer[] = [];

  constructor(
    private readonly create: () => McpServer,
    private readonly maxIdle = 64,
  ) {}

  acquire(): McpServer {
    return this.idle.pop() ?? this.create();
  }

  /** Closes the server's transport (ending any open stream) and keeps the server for the next request. */
  async release(server: McpServer): Promise<void> {
    await server.close();
    if (this.idle.length < this.maxIdle) this.idle.push(server);
  }
}
