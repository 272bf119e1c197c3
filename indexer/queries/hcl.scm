; HCL (Terraform): a labelled block is a definition, named the way Terraform refers to it:
; ``resource "aws_instance" "web"`` -> ``aws_instance.web``, ``variable "ami_id"`` ->
; ``variable.ami_id``, ``module "vpc"`` -> ``module.vpc``. Its text stays whole.
(block (identifier) (string_lit (template_literal) @receiver) . (string_lit (template_literal) @name)
  (body)) @definition.class
(block (identifier) @receiver . (string_lit (template_literal) @name) . (block_start)) @definition.class

; a reference names the object after its root: var.ami_id, module.vpc.id, aws_instance.web.ip
(expression (variable_expr) . (get_attr (identifier) @reference.type))
(function_call (identifier) @reference.call)
