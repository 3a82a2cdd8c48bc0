// Declarations of inputs.mjs (plain JavaScript, see there).
export declare const ROOT: string;
export declare const DIST: string;
export declare const INPUT_DIRS: readonly string[];
export declare const INPUT_FILES: readonly string[];
export declare const JS_KEY: '.source-key';
export declare const TYPES_KEY: '.types-key';
export declare function sourceKey(): string;
export declare function builtKey(which?: '.source-key' | '.types-key'): string | undefined;
export declare function distIsCurrent(which?: '.source-key' | '.types-key'): boolean;
