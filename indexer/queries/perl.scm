; Perl: subroutines are functions; a package written as a block (``package Foo { ... }``) is
; a class (the statement form, ``package Foo;``, holds nothing: its subs stay top level).
(subroutine_declaration_statement name: (bareword) @name body: (block) @body) @definition.function
(subroutine_declaration_statement name: (bareword) @name) @definition.function
(package_statement name: (package) @name (block) @body) @definition.class

(function_call_expression function: (function) @reference.call)
(ambiguous_function_call_expression function: (function) @reference.call)
(method_call_expression method: (method) @reference.call)
(method_call_expression invocant: (bareword) @reference.type)
