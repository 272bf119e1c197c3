; Definitions: @definition.<kind> is the whole node (wrapper included), @name its name,
; @body the part collapsed in class skeletons. References feed the symbol graph.
(function_definition name: (identifier) @name body: (block) @body) @definition.function
(decorated_definition
  definition: (function_definition name: (identifier) @name body: (block) @body)) @definition.function
(class_definition name: (identifier) @name body: (block) @body) @definition.class
(decorated_definition
  definition: (class_definition name: (identifier) @name body: (block) @body)) @definition.class

(call function: (identifier) @reference.call)
(call function: (attribute attribute: (identifier) @reference.call))
(class_definition superclasses: (argument_list (identifier) @reference.type))
(type (identifier) @reference.type)
(decorator (identifier) @reference.call)
(import_from_statement name: (dotted_name (identifier) @reference.import))
