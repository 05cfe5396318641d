// Reads a parquet file with hyparquet and prints its rows as JSON lines.
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet'

const file = await asyncBufferFromFile(process.argv[2])
const rows = await parquetReadObjects({ file })
for (const row of rows) {
  process.stdout.write(JSON.stringify(row, (_, v) => typeof v === 'bigint' ? Number(v) : v) + '\n')
}
