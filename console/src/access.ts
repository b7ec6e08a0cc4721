import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Me, Scope } from './api';

/**
 * What the signed-in credential may do, from `GET /v1/me`, so the console offers only that: a control whose call
 * the server would refuse (403) is not shown. The server still decides; this only spares the user the refusal.
 * The scopes each action needs are the routes' own (`@RequireScope` on the server): any one of them suffices.
 */
export const NEEDS = {
  readAgents: ['agents:read', 'agents:write'],
  writeAgents: ['agents:write'],
  invoke: ['a2a:invoke'],
  readTasks: ['tasks:read', 'a2a:invoke'],
  readStats: ['tasks:read'],
  readUsage: ['tasks:read', 'agents:read', 'agents:write'],
} as const satisfies Record<string, readonly Scope[]>;

export type TenantAction = keyof typeof NEEDS;

export interface Access {
  readAgents: boolean;
  writeAgents: boolean;
  invoke: boolean;
  readTasks: boolean;
  readStats: boolean;
  readUsage: boolean;
  /** An operator who may change things (`admin`); an auditor only reads. */
  adminWrite: boolean;
}

export function accessOf(me: Me): Access {
  if (me.kind === 'admin') {
    return {
      readAgents: false,
      writeAgents: false,
      invoke: false,
      readTasks: false,
      readStats: true,
      readUsage: true,
      adminWrite: me.role === 'admin',
    };
  }
  const has = (a: TenantAction): boolean => NEEDS[a].some((s) => me.scopes.includes(s));
  return {
    readAgents: has('readAgents'),
    writeAgents: has('writeAgents'),
    invoke: has('invoke'),
    readTasks: has('readTasks'),
    readStats: has('readStats'),
    readUsage: has('readUsage'),
    adminWrite: false,
  };
}

/** "agents:read or agents:write": the scopes an action needs, as a sentence names them. */
export const scopeNames = (scopes: readonly string[]): string => scopes.join(' or ');

const NONE: Access = {
  readAgents: false,
  writeAgents: false,
  invoke: false,
  readTasks: false,
  readStats: false,
  readUsage: false,
  adminWrite: false,
};

export const AccessContext = createContext<Access>(NONE);

export const useAccess = (): Access => useContext(AccessContext);
