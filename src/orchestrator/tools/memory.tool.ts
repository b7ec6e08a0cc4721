import { MAX_MEMORY_CONTENT, type MemoryService } from './memory.service.js';

const short = (s: string): string => (s.length > 200 ? `${s.slice(0, 200)}…` : s);

/** `/mem add <text> | get <id> | list | search <query> | delete <id>`: the tenant's team memory, as the model reads it. */
export async function memAsText(mem: MemoryService, tenantId: string, args: string): Promise<string> {
  const m = /^(\S+)(?:\s+([\s\S]*))?$/.exec(args);
  const sub = m?.[1] ?? '';
  const rest = (m?.[2] ?? '').trim();
  const line = (e: { id: string; content: string }): string =>
    `#${e.id} ${e.content.replace(/\s+/g, ' ').slice(0, 300)}`;
  switch (sub) {
    case 'add': {
      if (!rest) return 'ERR: usage: /mem add <text>';
      if (rest.length > MAX_MEMORY_CONTENT) return `ERR: an entry may be at most ${MAX_MEMORY_CONTENT} characters`;
      const e = await mem.add(tenantId, rest.replaceAll('\u0000', ''));
      return `stored as #${e.id}`;
    }
    case 'get': {
      const id = rest.replace(/^#/, '');
      if (!id) return 'ERR: usage: /mem get <id>';
      const e = await mem.get(tenantId, id);
      return e ? `#${e.id} (${e.createdAt.toISOString()})\n${e.content}` : `ERR: no memory entry #${id}`;
    }
    case 'list': {
      const { entries, total } = await mem.list(tenantId);
      if (total === 0) return 'no memory entries';
      return `${total} entries${total > entries.length ? `, newest ${entries.length} shown` : ''}:\n${entries.map(line).join('\n')}`;
    }
    case 'search': {
      if (!rest) return 'ERR: usage: /mem search <query>';
      const found = await mem.search(tenantId, rest.slice(0, 500));
      return found.length ? found.map(line).join('\n') : `no memory entries match "${short(rest)}"`;
    }
    case 'delete': {
      const id = rest.replace(/^#/, '');
      if (!id) return 'ERR: usage: /mem delete <id>';
      return (await mem.delete(tenantId, id)) ? `deleted #${id}` : `ERR: no memory entry #${id}`;
    }
    default:
      return 'ERR: usage: /mem add <text> | get <id> | list | search <query> | delete <id>';
  }
}
