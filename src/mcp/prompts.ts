import { ErrorCode, type GetPromptResult, McpError, type Prompt } from '@modelcontextprotocol/sdk/types.js';

/** A prompt an agent's user can pick to declare an emergency; its arguments complete (org ids, category names). */
export const DECLARE_PROMPT: Prompt = {
  name: 'declare_emergency',
  title: 'Declare an emergency',
  description: 'Asks the agent to declare an emergency with create_emergency, in an organization and under a category (permission: emergencies:write).',
  arguments: [
    { name: 'orgId', description: 'Organization id (UUID); completes to the organizations the key covers.', required: true },
    { name: 'categoryName', description: "Category name; completes to the organization's categories.", required: false },
    { name: 'description', description: 'What is happening, in a sentence.', required: false },
  ],
};

export function declarePrompt(name: string, args: Record<string, string> | undefined): GetPromptResult {
  if (name !== DECLARE_PROMPT.name)
    throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${name.slice(0, 100)}. This server has ${DECLARE_PROMPT.name}.`);
  const orgId = args?.orgId;
  if (!orgId) throw new McpError(ErrorCode.InvalidParams, 'The argument orgId is required.');
  const category = args?.categoryName ? ` under the category "${args.categoryName}"` : '';
  const what = args?.description ? ` Description: ${args.description}` : ' Ask me what is happening first if I have not said.';
  return {
    description: DECLARE_PROMPT.description,
    messages: [
      {
        role: 'user',
        content: {
          type: 'text',
          text:
            `Declare an emergency in organization ${orgId}${category} with the create_emergency tool.${what} ` +
            'Declaring alerts devices and people: confirm with me before you call it, and give it an externalId so that a retry cannot declare it twice.',
        },
      },
    ],
  };
}
