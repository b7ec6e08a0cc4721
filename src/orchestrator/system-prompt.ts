import { descriptiveSkills, type Constitution } from '../registry/constitution.js';

const BREVITY: Record<Constitution['brevity'], string> = {
  off: '',
  lite: 'Be concise.',
  full: 'Be brief: short sentences, no preamble, no filler.',
  ultra: 'Be as terse as possible: fragments are fine, no pleasantries.',
};

const MODE: Record<Constitution['mode'], string> = {
  standard: '',
  planner: 'Plan before you act: state the steps, then carry them out.',
  writer: 'You write finished text for the user to keep.',
};

/** Prompts by constitution: a resolved agent's constitution is one object until the agent changes. */
const prompts = new WeakMap<Constitution, string>();

/** The system prompt an agent's constitution gives the model (made once per constitution object). */
export function systemPrompt(c: Constitution): string {
  let prompt = prompts.get(c);
  if (prompt === undefined) {
    prompt = promptOf(c);
    prompts.set(c, prompt);
  }
  return prompt;
}

function promptOf(c: Constitution): string {
  const lines = [`You are ${c.name}${c.role ? `, ${c.role}` : ''}.`];
  if (c.goal) lines.push(`Goal: ${c.goal}`);
  if (c.personality) lines.push(`Personality: ${c.personality}`);
  const skills = descriptiveSkills(c);
  if (skills.length) lines.push(`Strengths: ${skills.join(', ')}.`);
  if (c.rules.length) lines.push('Rules:', ...c.rules.map((r) => `- ${r}`));
  for (const extra of [BREVITY[c.brevity], MODE[c.mode]]) if (extra) lines.push(extra);
  return lines.join('\n');
}
