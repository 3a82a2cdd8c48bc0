/** Entry point of the `fsjob` command; returns the process exit status. */
export async function main(argv: string[]): Promise<number> {
  process.stderr.write(`fsjob: not implemented yet (${argv.join(' ')})\n`);
  return 2;
}
