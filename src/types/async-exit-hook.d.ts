// The part of async-exit-hook's API we use (it ships no types).
declare module 'async-exit-hook' {
  interface ExitHook {
    hookedEvents(): string[];
    unhookEvent(event: string): void;
  }
  const exitHook: ExitHook;
  export default exitHook;
}
