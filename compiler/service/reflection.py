"""Server reflection under both of its names: grpc.reflection.v1 and grpc.reflection.v1alpha.

grpcurl and newer clients ask for grpc.reflection.v1.ServerReflection first;
grpcio-reflection serves only v1alpha. The two protocols are the same messages in
another package, byte for byte, so v1 here is grpcio-reflection's servicer behind v1's
method name, reading and writing the same bytes. v1's file descriptor, made from
v1alpha's by renaming its package, joins the descriptor pool so that reflection can
describe itself under either name.
"""

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

V1ALPHA = reflection.SERVICE_NAME
V1 = "grpc.reflection.v1.ServerReflection"
_V1_FILE = "grpc/reflection/v1/reflection.proto"


def enable(service_names, server):
    """Serve reflection (both versions) of `service_names` and of itself on `server`."""
    _add_v1_descriptor()
    servicer = reflection.ReflectionServicer(tuple(service_names) + (V1ALPHA, V1))
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    v1 = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(V1, {"ServerReflectionInfo": v1}),))


def _add_v1_descriptor():
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_V1_FILE)
        return
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    old, new = "." + proto.package + ".", ".grpc.reflection.v1."
    proto.name, proto.package = _V1_FILE, "grpc.reflection.v1"
    proto.ClearField("options")
    messages = list(proto.message_type)
    while messages:
        message = messages.pop()
        messages += message.nested_type
        for field in message.field:
            if field.type_name.startswith(old):
                field.type_name = new + field.type_name[len(old):]
    for service in proto.service:
        for method in service.method:
            method.input_type = new + method.input_type[len(old):]
            method.output_type = new + method.output_type[len(old):]
    pool.AddSerializedFile(proto.SerializeToString())
