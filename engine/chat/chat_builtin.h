#pragma once
// Hand-written renderers for common prompt formats, used when a model's own template is
// missing or unusable. Each reproduces its family's reference template for ordinary chats
// (system, user and assistant messages):
//   plain     bos "System: ...\nUser: ...\nAssistant: ...\n" + "Assistant:"
//   llama2    Llama 2 chat: bos "[INST] <<SYS>>\nsys\n<</SYS>>\n\nuser [/INST] answer eos"
//   llama3    Llama 3: bos "<|start_header_id|>role<|end_header_id|>\n\ntext<|eot_id|>"
//   chatml    "<|im_start|>role\ntext<|im_end|>\n" (Qwen, Hermes, Yi...)
//   mistral   Mistral Nemo: bos "[INST]user[/INST]answer eos", system joined to the last user turn
//   phi3      Phi-3: "<|role|>\ntext<|end|>\n", eos when there is no generation prompt
//   gemma     Gemma 2/3: bos "<start_of_turn>user\ntext<end_of_turn>\n", assistant as "model",
//             system joined to the first user turn (Gemma has no system role; Gemma 3's way)
//   zephyr    "<|role|>\ntext" eos "\n"
//   deepseek  DeepSeek R1: bos system "<｜User｜>text<｜Assistant｜>answer<｜end▁of▁sentence｜>",
//             earlier answers without their <think> part, prompt "<｜Assistant｜><think>\n"
//   qwen3     Qwen3: chatml; replies lose their <think> part except after the last user
//             message; the prompt is "<|im_start|>assistant\n", plus an empty
//             "<think>\n\n</think>\n\n" when enable_thinking is false
//   harmony   gpt-oss: "<|start|>system<|message|>" identity, date, "Reasoning: effort", channels
//             "<|end|>", the system message as the developer's "# Instructions", then
//             "<|start|>role<|message|>text<|end|>" with replies on the final channel (their
//             thinking dropped); prompt "<|start|>assistant"
//   mistral3  Mistral Small 3.x / Ministral 3: bos "[SYSTEM_PROMPT]sys[/SYSTEM_PROMPT]"
//             "[INST]user[/INST]answer" eos; no default system prompt
//   qwen35    Qwen3.5 / 3.6 (not qwen3's format): chatml with every message trimmed; replies
//             after the last user message always carry "<think>\nthinking\n</think>\n\n"
//             (empty or not), earlier ones none; the prompt opens the thinking,
//             "<|im_start|>assistant\n<think>\n", or closes an empty one when enable_thinking
//             is false (its tool calls, which no builtin writes, are Qwen3-Coder's XML)
//   gemma4    Gemma 4: bos, "<|turn>system\n" (+ "<|think|>\n" when enable_thinking) sys
//             "<turn|>\n" when either is there, then "<|turn>role\ntext<turn|>\n" with
//             replies as "model" and their thought channels dropped; the prompt is
//             "<|turn>model\n", plus an empty "<|channel>thought\n<channel|>" unless
//             enable_thinking is true

#include <span>
#include <string>

#include "engine/chat/chat_template.h"

namespace lr::chat {

std::string render_builtin(ChatFamily family, std::span<const ChatMessage> messages, const ChatRenderOptions & options);

}  // namespace lr::chat
