import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

/** `?limit=&cursor=` on list routes. */
export class PageQueryDto {
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'limit must be an integer between 1 and 200' })
  @Min(1, { message: 'limit must be an integer between 1 and 200' })
  @Max(MAX_PAGE_SIZE, { message: 'limit must be an integer between 1 and 200' })
  limit?: number;

  @IsOptional()
  @IsString()
  @MaxLength(512)
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}
