import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { IsIn, IsNotEmpty, IsString, Matches, MaxLength } from 'class-validator';
import { Transform } from 'class-transformer';
import {
  AdminOnly,
  ChangedBy,
  OPERATOR_ROLES,
  type ChangeBy,
  type OperatorRole,
} from '../../common/auth.decorators.js';
import { IssuerDirectory } from '../../tenants/identity/issuer-directory.service.js';
import { IssuerDto, IssuerPatchDto } from '../../tenants/identity/issuer.dto.js';
import { OperatorTokens } from '../../tenants/services/operator-tokens.service.js';

export class CreateOperatorDto {
  /** Who holds the token: the actor its changes are audited under (`operator:<name>`). */
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @IsNotEmpty()
  @MaxLength(128)
  @Matches(/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/, { message: 'name must be printable ASCII' })
  name: string;

  @IsIn(OPERATOR_ROLES, { message: `role must be one of ${OPERATOR_ROLES.join(', ')}` })
  role: OperatorRole;
}

/**
 * `/v1/admin/issuers` (identity providers whose JWTs are accepted) and
 * `/v1/admin/operators` (named operator tokens), for operators; a change
 * is in force on every replica when it answers.
 */
@AdminOnly()
@ApiTags('admin')
@Controller('v1/admin')
export class AdminIdentityController {
  constructor(
    private readonly issuers: IssuerDirectory,
    private readonly operators: OperatorTokens,
  ) {}

  @Post('issuers')
  createIssuer(@Body() dto: IssuerDto, @ChangedBy() by: ChangeBy) {
    return this.issuers.create(dto, by);
  }

  @Get('issuers')
  async listIssuers() {
    return { items: await this.issuers.list() };
  }

  @Get('issuers/:id')
  getIssuer(@Param('id') id: string) {
    return this.issuers.get(id);
  }

  /** Keys left out are unchanged. Tokens already verified are checked again under the new settings. */
  @Patch('issuers/:id')
  updateIssuer(@Param('id') id: string, @Body() dto: IssuerPatchDto, @ChangedBy() by: ChangeBy) {
    return this.issuers.update(id, dto, by);
  }

  /** Its tokens are refused from now on, and the streams they opened end. */
  @Delete('issuers/:id')
  @HttpCode(204)
  async removeIssuer(@Param('id') id: string, @ChangedBy() by: ChangeBy): Promise<void> {
    await this.issuers.remove(id, by);
  }

  /** A named operator token (`adm_…`), shown once. */
  @Post('operators')
  createOperator(@Body() dto: CreateOperatorDto, @ChangedBy() by: ChangeBy) {
    return this.operators.create(dto.name, dto.role, by);
  }

  @Get('operators')
  async listOperators() {
    return { items: await this.operators.list() };
  }

  @Delete('operators/:id')
  revokeOperator(@Param('id') id: string, @ChangedBy() by: ChangeBy) {
    return this.operators.revoke(id, by);
  }
}
