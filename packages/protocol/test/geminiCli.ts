/**
 * A request body shaped like Gemini CLI's second request of a tool loop (`POST
 * /v1beta/models/<model>:streamGenerateContent?alt=sse`): its environment preamble, the user's
 * task, the model's signed `write_file` call (no `id`, as Gemini sends it) and the function
 * response carrying Gemini CLI's own call id, with its tool declarations in JSON Schema
 * (`parametersJsonSchema`), one in the older OpenAPI form (`parameters`, upper-case types), and its
 * generation config (thinking on).
 */
export const geminiCliToolLoop = {
  contents: [
    {
      role: "user",
      parts: [{
        text: "This is the Gemini CLI. We are setting up the context for our chat.\nToday's date is Wednesday, " +
          "December 2, 2026.\nMy operating system is: linux\nI'm currently working in the directory: /tmp/work"
      }]
    },
    { role: "model", parts: [{ text: "Got it. Thanks for the context!" }] },
    { role: "user", parts: [{ text: "Create hello.txt containing the word hi." }] },
    {
      role: "model",
      parts: [
        { text: "I will write the file.", thought: true },
        {
          functionCall: { name: "write_file", args: { file_path: "/tmp/work/hello.txt", content: "hi" } },
          thoughtSignature: "CiQBjz1rX3Nl"
        }
      ]
    },
    {
      role: "user",
      parts: [{
        functionResponse: {
          id: "write_file-1764650000000-5f2a1c",
          name: "write_file",
          response: { output: "Successfully created and wrote to new file: /tmp/work/hello.txt." }
        }
      }]
    }
  ],
  systemInstruction: {
    role: "user",
    parts: [{ text: "You are an interactive CLI agent specializing in software engineering tasks." }]
  },
  tools: [{
    functionDeclarations: [
      {
        name: "write_file",
        description: "Writes content to a specified file in the local filesystem.",
        parametersJsonSchema: {
          type: "object",
          properties: {
            file_path: { type: "string", description: "The absolute path to the file to write to." },
            content: { type: "string", description: "The content to write to the file." }
          },
          required: ["file_path", "content"]
        }
      },
      {
        name: "run_shell_command",
        description: "Executes a given shell command as `bash -c <command>`.",
        parameters: {
          type: "OBJECT",
          properties: {
            command: { type: "STRING", description: "Exact bash command to execute." },
            directory: { type: "STRING" }
          },
          required: ["command"]
        }
      }
    ]
  }],
  generationConfig: { temperature: 0, topP: 1, thinkingConfig: { includeThoughts: true, thinkingBudget: -1 } }
}
