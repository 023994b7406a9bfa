import type { onResponseHookHandler, preHandlerHookHandler, RouteOptions } from 'fastify';

/**
 * Adds a hook to one route as it is registered, after the route's own hooks, so the hook knows the route's options without
 * reading `request.routeOptions`, which Fastify builds anew on each access.
 */
export function appendRouteHook(route: RouteOptions, name: 'preHandler', hook: preHandlerHookHandler): void;
export function appendRouteHook(route: RouteOptions, name: 'onResponse', hook: onResponseHookHandler): void;
export function appendRouteHook(route: RouteOptions, name: 'preHandler' | 'onResponse', hook: unknown): void {
  const own: unknown = route[name];
  const before = own === undefined ? [] : Array.isArray(own) ? own : [own];
  (route as unknown as Record<string, unknown[]>)[name] = [...before, hook];
}
