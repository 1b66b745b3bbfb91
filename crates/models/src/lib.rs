//! Model providers behind one trait: OpenAI Chat Completions and Anthropic Messages, streaming and tool calls.
